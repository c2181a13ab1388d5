//! The release build the benches measure, made by the cargo that runs them.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// `cargo build --release --bin lingo` (the cargo that runs this bench), and the path of the
/// binary it built, from its JSON messages. Without the variables cargo set for this bench
/// (`CARGO_PKG_NAME`, `CARGO_MANIFEST_DIR`, ...): build scripts that rerun when one changes
/// (ring's) would otherwise be built again here, and again by the next plain `cargo build`.
///
/// It builds what a plain `cargo build --release` in this directory builds: flags given to
/// `cargo bench` itself (`--target`, `--config`, a toolchain) are not passed on, while the
/// environment (`CARGO_TARGET_DIR`, `RUSTFLAGS`, ...) is.
pub fn build() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    for (key, _) in std::env::vars_os() {
        let set_for_us = key.to_str().is_some_and(|key| {
            key.starts_with("CARGO_PKG_")
                || key.starts_with("CARGO_BIN_")
                || key.starts_with("CARGO_MANIFEST_")
                || matches!(
                    key,
                    "CARGO_CRATE_NAME"
                        | "CARGO_PRIMARY_PACKAGE"
                        | "CARGO_TARGET_TMPDIR"
                        | "CARGO_RUSTC_CURRENT_DIR"
                        | "OUT_DIR"
                )
        });
        if set_for_us {
            build.env_remove(key);
        }
    }
    let out = build
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["build", "--release", "--locked", "--bin", "lingo"])
        .arg("--message-format=json-render-diagnostics")
        .stderr(Stdio::inherit())
        .output()
        .expect("run cargo build --release");
    assert!(out.status.success(), "cargo build --release failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["target"]["name"] == "lingo")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo build --release named no lingo executable")
}
