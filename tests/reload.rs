//! Hot reload: file edits (in place, rename-over, ConfigMap symlink swap) swap the table; a
//! bad file is refused and the old table keeps serving; requests in flight finish on the
//! table they started with.

mod support;

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::Method;
use support::*;

fn routed_to(backend: &Backend) -> String {
    table(&format!(
        "upstreams:\n  models:\n    url: {}\n    speaks: native\nroutes:\n  - {{ prefix: /api, to: models }}\n",
        backend.url()
    ))
}

/// Polls until `/api/tags` gets a response with `want`, for at most 20 s.
async fn eventually_responds(lingo: &Lingo, want: &str) {
    for _ in 0..200 {
        if get(&lingo.url("/api/tags")).await.body == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("lingo never responded with {want}");
}

fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp~");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[tokio::test]
async fn an_edited_file_takes_over() {
    let one = Backend::json(200, "one").await;
    let two = Backend::json(200, "two").await;
    let lingo = Lingo::start(&routed_to(&one)).await;
    assert_eq!(get(&lingo.url("/api/tags")).await.body, "one");
    std::fs::write(lingo.config_path(), routed_to(&two)).unwrap();
    eventually_responds(&lingo, "two").await;
    assert!(lingo.reloader.snapshot().generation >= 2);
}

#[tokio::test]
async fn an_editor_rename_over_the_file_takes_over() {
    let one = Backend::json(200, "one").await;
    let two = Backend::json(200, "two").await;
    let lingo = Lingo::start(&routed_to(&one)).await;
    write_atomically(&lingo.config_path(), &routed_to(&two));
    eventually_responds(&lingo, "two").await;
}

/// Kubernetes mounts a ConfigMap as `proxy.yaml -> ..data/proxy.yaml` and swaps `..data`.
#[cfg(unix)]
#[tokio::test]
async fn a_configmap_symlink_swap_takes_over() {
    use std::os::unix::fs::symlink;
    let one = Backend::json(200, "one").await;
    let two = Backend::json(200, "two").await;
    let lingo = Lingo::start(&routed_to(&one)).await;
    let dir = lingo.dir.path();
    for (version, backend) in [("..v1", &one), ("..v2", &two)] {
        std::fs::create_dir(dir.join(version)).unwrap();
        std::fs::write(dir.join(version).join("proxy.yaml"), routed_to(backend)).unwrap();
    }
    symlink("..v1", dir.join("..data")).unwrap();
    std::fs::remove_file(lingo.config_path()).unwrap();
    symlink("..data/proxy.yaml", lingo.config_path()).unwrap();
    eventually_responds(&lingo, "one").await;
    symlink("..v2", dir.join("..data_tmp")).unwrap();
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    eventually_responds(&lingo, "two").await;
}

#[tokio::test]
async fn a_broken_file_is_refused_and_the_old_table_keeps_serving() {
    let one = Backend::json(200, "one").await;
    let lingo = Lingo::start(&routed_to(&one)).await;
    let generation = lingo.reloader.snapshot().generation;
    for broken in [
        "listen: [\n",
        &routed_to(&one).replace("to: models", "to: nowhere"),
        &routed_to(&one).replace("speaks: native", "speaks: klingon"),
    ] {
        std::fs::write(lingo.config_path(), broken).unwrap();
        let err = lingo.reloader.reload(true).unwrap_err();
        assert!(!err.to_string().is_empty());
        assert_eq!(lingo.reloader.snapshot().generation, generation);
        assert_eq!(get(&lingo.url("/api/tags")).await.body, "one");
    }
    let two = Backend::json(200, "two").await;
    std::fs::write(lingo.config_path(), routed_to(&two)).unwrap();
    lingo.reloader.reload(true).unwrap();
    assert_eq!(get(&lingo.url("/api/tags")).await.body, "two");
}

/// A stream that started on the old table finishes there, even though the new table no
/// longer has its upstream; new requests go to the new upstream.
#[tokio::test]
async fn a_request_in_flight_finishes_on_its_own_table() {
    let (slow, lines_tx) = scripted_backend().await;
    let other = Backend::json(200, "other").await;
    let lingo = Lingo::start(&routed_to(&slow)).await;

    let req = request(Method::POST, &lingo.url("/api/chat"), &[], "{}");
    let mut body = client().request(req).await.unwrap().into_body();
    lines_tx.send(Bytes::from_static(b"first\n")).unwrap();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(first, "first\n");

    std::fs::write(lingo.config_path(), routed_to(&other)).unwrap();
    lingo.reloader.reload(true).unwrap();
    assert_eq!(get(&lingo.url("/api/tags")).await.body, "other");

    lines_tx.send(Bytes::from_static(b"second\n")).unwrap();
    drop(lines_tx);
    let rest = body
        .collect()
        .await
        .expect("the old stream was not cut")
        .to_bytes();
    assert_eq!(rest, "second\n");
}

#[tokio::test]
async fn unchanged_files_are_not_reloaded() {
    let one = Backend::json(200, "one").await;
    let lingo = Lingo::start(&routed_to(&one)).await;
    assert!(matches!(
        lingo.reloader.reload(false),
        Err(lingo::reload::ReloadError::Unchanged)
    ));
    assert_eq!(
        lingo.reloader.reload(true).unwrap(),
        2,
        "a forced reload (SIGHUP) always runs"
    );
}
