# lingo's container image: the release binary, the shipped route table, a non-root user.
#
#   docker build -t lingo .
#   docker run --rm -p 8080:8080 -v "$PWD/examples:/etc/lingo:ro" -e LINGO_APP_KEY=... \
#     lingo --config /etc/lingo/public.yaml
#
# The shipped table (/etc/lingo/proxy.yaml) listens on 127.0.0.1:8080 and has no client
# keys, so the image as built responds only inside the container. To serve other hosts,
# mount a table that listens on 0.0.0.0 with client keys (examples/public.yaml) over
# /etc/lingo, as a directory so that edits reach the reload (docs/operations.md).

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked && install -m 755 target/release/lingo /usr/local/bin/lingo

FROM debian:bookworm-slim
# curl for the health check; lingo itself needs nothing beyond glibc (its TLS roots are built in).
RUN apt-get update \
 && apt-get install -y --no-install-recommends curl \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/lingo /usr/local/bin/lingo
COPY proxy.yaml /etc/lingo/proxy.yaml
# A numeric user, so that Kubernetes' runAsNonRoot can check it.
USER 10001:10001
EXPOSE 8080
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/usr/local/bin/lingo"]
CMD ["--config", "/etc/lingo/proxy.yaml"]
