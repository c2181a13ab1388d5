#!/usr/bin/env python3
"""Writes the seed corpora of the differential HTTP/1.1 targets: corpus/h1_request and
corpus/h1_response (run from fuzz/). The cases are those the tests know (tests/smuggling.rs,
tests/upstream_h1.rs, the unit tests of src/server/h1, src/upstream/h1 and src/http/h1),
each written once whole and once in three pieces (the targets' first byte)."""

import hashlib
import os
import sys

# Requests, as a client sends them (tests/smuggling.rs, src/server/h1/tests.rs, head.rs).
HIDDEN = b"GET /api/pull HTTP/1.1\r\nHost: lingo\r\n\r\n"
SMUGGLED = b"0\r\n\r\nPOST /api/pull HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2\r\n\r\n{}"
REQUESTS = [
    # plain, pipelined, bodies framed each way
    b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\nHost: lingo\r\nConnection: close\r\n\r\n",
    b"POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\n\r\nabc"
    b"POST /b HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n"
    b"2\r\nde\r\n1;ext=1\r\nf\r\n0\r\ntrailer: t\r\n\r\n"
    b"GET /c HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    b"POST /up HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 4\r\n\r\nbody",
    b"GET / HTTP/1.0\r\n\r\n",
    b"GET / HTTP/1.0\r\nconnection: keep-alive\r\n\r\nGET /2 HTTP/1.0\r\n\r\n",
    b"GET /ws HTTP/1.1\r\nconnection: keep-alive, Upgrade\r\nupgrade: websocket\r\n\r\n",
    b"GET /ws HTTP/1.1\r\nHost: lingo\r\nConnection: upgrade\r\nUpgrade: websocket\r\n"
    b"Content-Length: %d\r\n\r\n%s" % (len(HIDDEN), HIDDEN),
    b"POST /x?y=1 HTTP/1.1\r\nexpect: 100-Continue\r\ncontent-length: 2\r\n\r\nxy",
    b"CONNECT lingo:443 HTTP/1.1\r\nHost: lingo:443\r\n\r\nGET / HTTP/1.1\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nHost: lingo\r\n\r\n",
    b"GET http://lingo/api/pull HTTP/1.1\r\nHost: other\r\n\r\n",
    # ambiguous framing
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n%s"
    % (len(SMUGGLED), SMUGGLED),
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\nabc",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2\r\nContent-Length: 12\r\n\r\n{}GET /api/ps",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2, 12\r\n\r\n{}GET /api/ps",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2, 2\r\n\r\n{}",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: +2\r\n\r\n{}",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 0x2\r\n\r\n{}",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 99999999999999999999999\r\n\r\n{}",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 00000000000000000000002\r\n\r\n{}",
]
for te in [b"chunked, identity", b"identity", b"garbage", b"xchunked", b"gzip, chunked",
           b"Chunked", b" chunked ", b"chunked\x0b"]:
    REQUESTS.append(b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: " + te +
                    b"\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
REQUESTS += [
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    b"POST /api/chat HTTP/1.0\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding : chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    # chunked bodies, good and broken
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n{}\r\n0\r\n\r\n",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"00000000000000000002\r\n{}\r\n0\r\n\r\n",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"2 ;a=b\r\n{}\r\n0\r\nx-t: 1\n\nGET /api/pull HTTP/1.1\r\n\r\n",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"2\r\n{}\r\n0\r\nx-t: 1\r\n\nGET /api/pull HTTP/1.1\r\n\r\n",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"2\n{}\n0\n\n",
    b"POST /api/%63hat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    # malformed lines
    b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Long: a\r\n b\r\n\r\n",
    b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Long: a\r\n\tb\r\n\r\n",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2\r\n 0\r\n\r\n{}",
    b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
    b"GET /api/tags HTTP/1.1\r\n Host: lingo\r\n\r\n",
    b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX Bad: 1\r\n\r\n",
    b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX\0Bad: 1\r\n\r\n",
    b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX(Bad): 1\r\n\r\n",
    "GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Bäd: 1\r\n\r\n".encode(),
    b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\n: 1\r\n\r\n",
    b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Bad: a\0b\r\n\r\n",
    b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Bad: a\x7fb\r\n\r\n",
    b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Bad: a\rb\r\n\r\n",
    b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Bad\r\n\r\n",
    b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Obs: caf\xe9 \xff\r\n\r\n",
    b"GET /api/tags HTTP/1.1\rHost: lingo\r\r",
    b"GET  /api/tags HTTP/1.1\r\nHost: lingo\r\n\r\n",
    b"GET /api/tags HTTP/1.1 x\r\nHost: lingo\r\n\r\n",
    b"GET /api/tags HTTP/1.7\r\nHost: lingo\r\n\r\n",
    b"GET /api/ tags HTTP/1.1\r\nHost: lingo\r\n\r\n",
    b"GET /api/\0tags HTTP/1.1\r\nHost: lingo\r\n\r\n",
    b"GET /api/tags http/1.1\r\nHost: lingo\r\n\r\n",
    b"GET * HTTP/1.1\r\nHost: lingo\r\n\r\n",
    b"GET /api/tags HTTP/1.1\nHost: lingo\n\n",
    b"GET /api/tags HTTP/1.1\nHost: lingo\r\n\r\n",
    b"\r\n\r\nGET /api/tags HTTP/1.1\r\nHost: lingo\r\n\r\n",
    b"GET /api/tags HTTP/1.1\r\n\r\n",
    b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nHost: evil.example\r\n\r\n",
    b"GET /api/tags HTTP/1.1\r\nHost:\r\nHost: evil.example\r\n\r\n",
    b"GET /api/tags HTTP/1.1\r\nHost: a b@c\r\n\r\n",
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    b"G\xc3\x89T / HTTP/1.1\r\n\r\n",
    b"GET /" + b"a" * 2000 + b" HTTP/1.1\r\nHost: lingo\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + b"".join(b"x-%d: v\r\n" % i for i in range(101)) + b"\r\n",
    b"GET / HTTP/1.1\r\n" + b"".join(b"x-%d: v\r\n" % i for i in range(33)) + b"\r\n",
]
# the differences the targets found (h1/known/), smallest form
REQUESTS += [
    b"POST / HTTP/1.1\r\nTransfer-Encoding: \xff, chunked\r\n\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\nTransfer-Encoding: \xff\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\nContent-Length: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: x\r\n\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\nabc",
    b"POST / HTTP/1.1\r\nContent-Length: 18446744073709551614\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 18446744073709551614\r\n\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\nContent-Length: 18446744073709551613\r\n\r\nabc",
    b"POST / HTTP/1.1\r\nContent-Length: 0000\r\nContent-Length: 0\r\n\r\n",
    b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\nGET /hidden HTTP/1.1\r\n\r\n",
    b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2;\x01\r\n{}\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz" + b"z" * 100,
    b"GET / HTTP/1.0\r\nConnection: \xff, keep-alive\r\n\r\nGET /2 HTTP/1.0\r\n\r\n",
    b"GET / HTTP/1.1\r\nConnection: \xff, close\r\n\r\nGET /2 HTTP/1.1\r\n\r\n",
    b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0;\r\nx: 1\nGET /hidden HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + b"".join(b"x-%d: v\r\n" % i for i in range(101)),
]
# every spelling of a way out of a prefix (tests/smuggling.rs ESCAPES), as targets
for path in [b"/public/../api/pull", b"/public/%2e%2e/api/pull", b"/public/..%2fapi%2fpull",
             b"/public/..\\api\\pull", b"//api/pull", b"/api/pull#x", b"/api/pull%00",
             b"http://lingo/public/../api/pull", b"lingo:80", b"/api/pull?x=1"]:
    REQUESTS.append(b"POST " + path + b" HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2\r\n\r\n{}")

# Responses, as an upstream writes them (tests/upstream_h1.rs, src/upstream/h1/tests.rs).
RESPONSES = [
    b"HTTP/1.1 200 OK\r\ncontent-length: 13\r\n\r\nhello, world!",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
    b"5;ext=1\r\nhello\r\n1;a=b;c=\"d\"\r\n \r\n6\r\nworld!\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntrailer: x-checksum\r\n\r\n"
    b"4\r\nwith\r\n9\r\n trailers\r\n0\r\nx-checksum: abc\r\nx-more: 1\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nuntil the end",
    b"HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nfrom 1.0",
    b"HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 2\r\n\r\nok",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfinal",
    b"HTTP/1.1 103 Early Hints\r\nlink: </x>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfinal",
    b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n",
    b"HTTP/1.1 204 No Content\r\nx-kind: none\r\n\r\n",
    b"HTTP/1.1 204 No Content\r\ncontent-length: 5, 5\r\n\r\n",
    b"HTTP/1.1 304 Not Modified\r\netag: \"v1\"\r\ncontent-length: abc\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}",
    b"SSH-2.0-OpenSSH_9.6 hello there\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part",
    b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello!",
    b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\ncontent-length: 5, 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\nmore\r\n",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 99\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\nraw until the close",
    b"HTTP/1.0 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n",
    b"HTTP/1.1 200 OK\r\nx-name: caf\xe9 \xff\xfe\r\ncontent-length: 2\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\n"
    b"Connection: keep-alive, X-Up-Hop\r\nX-Up-Hop: 1\r\nKeep-Alive: timeout=5\r\n"
    b"X-Request-Id: upstream-id\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\nX-Kept:  as written  \r\n"
    b"Transfer-Encoding: chunked\r\nContent-Length: 99\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n00000000000000000002\r\n{}\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nx-t: 1\n\n",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\n{}\n0\n\n",
    b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
    b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\ncontent-length: 2\r\n\r\nok",
    b"HTTP/1.1 200\r\ncontent-length: 2\r\n\r\nok",
    b"HTTP/1.1 999 Whatever\r\ncontent-length: 2\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\n" + b"".join(b"x-h-%d: v%d\r\n" % (i, i) for i in range(99)) +
    b"content-length: 2\r\n\r\n{}",
    # the differences the target found (h1/known/), smallest form
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: \xff, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551614\r\n\r\nabc",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: \xff\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nx: 1\nHTTP/1.1 200 OK\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;\x01\r\n{}\r\n0\r\n\r\n",
    b"HTTP/1.0 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"HTTP/1.0 200 OK\r\nConnection: \xff, keep-alive\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\nConnection: \xff, close\r\nContent-Length: 2\r\n\r\nok",
]


def write(folder, cases):
    os.makedirs(folder, exist_ok=True)
    for case in cases:
        # whole (first byte 0), and in three pieces (the pieces' bits: 2 for a request,
        # 2 << 2 for a response); a response both to a GET and to a HEAD, kept raw or not
        firsts = [0, 2] if folder.endswith("h1_request") else [0, 1, 2, 3, 8, 11]
        for first in firsts:
            data = bytes([first]) + case
            name = hashlib.sha1(data).hexdigest()
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    root = sys.argv[1] if len(sys.argv) > 1 else "corpus"
    write(os.path.join(root, "h1_request"), REQUESTS)
    write(os.path.join(root, "h1_response"), RESPONSES)
    print(f"{len(REQUESTS)} requests, {len(RESPONSES)} responses written under {root}/")
