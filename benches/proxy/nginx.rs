//! nginx as a plain keep-alive reverse proxy to the same backend, for the load bench's
//! reference row: what a mature C proxy costs on this machine, in the same run as lingo.
//!
//! Its configuration is written to a temporary directory and it runs in the foreground
//! (`daemon off`) as the bench's child, with as many workers as there are cores, response
//! buffering off (tokens pass as they come, like lingo) and a pool of idle upstream
//! connections. Not installed: the bench says so and skips the row (CI need not install it).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running nginx; stopped when dropped.
pub struct Nginx {
    child: Child,
}

/// Where nginx is installed, if it is: on `PATH` or in `/usr/sbin` (Debian's place, which a
/// non-root `PATH` often lacks).
fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|dir| dir.join("nginx"))
        .find(|exe| exe.is_file())
}

/// The configuration: the same keep-alive behaviour lingo has (no cap on requests per
/// connection on either side), response buffering off, logging off.
fn config(dir: &Path, listen: SocketAddr, backend: SocketAddr, workers: usize) -> String {
    let dir = dir.display();
    format!(
        "worker_processes {workers};\ndaemon off;\npid {dir}/nginx.pid;\nerror_log {dir}/error.log warn;\n\
         worker_rlimit_nofile 20000;\nevents {{ worker_connections 10000; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {dir}/body;\n  proxy_temp_path {dir}/proxy;\n\
         \x20 keepalive_requests 1000000;\n\
         \x20 upstream backend {{ server {backend}; keepalive 1024; keepalive_requests 1000000; }}\n\
         \x20 server {{\n    listen {listen};\n    location / {{\n      proxy_pass http://backend;\n\
         \x20     proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n\
         \x20     proxy_buffering off;\n    }}\n  }}\n}}\n"
    )
}

impl Nginx {
    /// Starts nginx on `listen` in front of `backend`, or says why not (and returns `None`).
    pub fn start(dir: &Path, listen: SocketAddr, backend: SocketAddr) -> Option<Nginx> {
        let Some(exe) = find() else {
            println!(
                "nginx is not installed: skipping the nginx rows (apt-get install -y nginx-light)"
            );
            return None;
        };
        let dir = dir.join("nginx");
        std::fs::create_dir_all(&dir).ok()?;
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let conf = dir.join("nginx.conf");
        std::fs::write(&conf, config(&dir, listen, backend, workers)).ok()?;
        let child = Command::new(exe)
            .arg("-p")
            .arg(&dir)
            .arg("-e")
            .arg(dir.join("error.log"))
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn();
        match child {
            Ok(child) => Some(Nginx { child }),
            Err(err) => {
                println!("nginx did not start ({err}): skipping the nginx rows");
                None
            }
        }
    }

    /// The master's pid; its workers are its children.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM is nginx's fast shutdown: the master stops its workers, then exits (a
        // SIGKILL would leave the workers running).
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

/// CPU seconds of a process and all of its children still running (nginx's master and its
/// workers), from `/proc`.
pub fn tree_cpu(pid: u32) -> f64 {
    let mut total = crate::cpu_of(pid);
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return total;
    };
    for entry in entries.flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
        let ppid = stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            total += crate::cpu_of(child);
        }
    }
    total
}
