//! A `redis-server` of the test's own: a free port, a temporary directory, stopped when
//! dropped. Where there is no `redis-server`, [`RedisServer::start`] says so (and fails
//! under `CI`, where `.ci/run` installs it).

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `redis-server`.
pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
    dir: tempfile::TempDir,
    appendonly: bool,
    /// A node of a Redis Cluster ([`RedisCluster`]).
    cluster: bool,
}

impl RedisServer {
    /// A server on a free port, writing an append-only file or not; `None` (having said
    /// why) when `redis-server` is not installed.
    pub fn start(appendonly: bool) -> Option<RedisServer> {
        let there = Command::new("redis-server")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !there && !super::can_run("redis-server", "apt-get install -y redis-server") {
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut server = RedisServer {
            child: None,
            port,
            dir: tempfile::tempdir().unwrap(),
            appendonly,
            cluster: false,
        };
        server.run();
        Some(server)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops the server (as `kill -9` would), forgets everything it held, and starts it
    /// again, empty, on the same port.
    pub fn restart_empty(&mut self) {
        self.stop();
        for entry in std::fs::read_dir(self.dir.path()).unwrap() {
            let path: PathBuf = entry.unwrap().path();
            let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
        }
        self.run();
    }

    /// A plain connection, to look at what the server holds.
    pub fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }

    /// Stops the server's process without ending it (`SIGSTOP`): connections stay open and
    /// nothing answers, as with a Redis stuck or cut off.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a paused server go on (`SIGCONT`).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, which: &str) {
        let pid = self.child.as_ref().expect("running").id().to_string();
        let sent = Command::new("kill").args([which, &pid]).status().unwrap();
        assert!(sent.success(), "kill {which} {pid}");
    }

    fn run(&mut self) {
        let appendonly = if self.appendonly { "yes" } else { "no" };
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--appendonly", appendonly, "--save", ""])
            .args(["--cluster-enabled", if self.cluster { "yes" } else { "no" }])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        for _ in 0..100 {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("redis-server did not start on port {}", self.port);
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // A paused server cannot die until it goes on.
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A Redis Cluster of three `redis-server`s (no replicas) on free ports, stopped when dropped.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Three nodes made one cluster (`redis-cli --cluster create`); `None` (having said why)
    /// when `redis-server` is not installed.
    pub fn start() -> Option<RedisCluster> {
        let mut nodes = Vec::new();
        for _ in 0..3 {
            let mut node = RedisServer::start(false)?;
            node.stop();
            node.cluster = true;
            node.run();
            nodes.push(node);
        }
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let made = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(made.success(), "redis-cli --cluster create failed");
        let cluster = RedisCluster { nodes };
        for _ in 0..100 {
            if cluster.is_ok() {
                return Some(cluster);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the Redis Cluster never said cluster_state:ok");
    }

    /// Whether every node says the cluster is ok.
    fn is_ok(&self) -> bool {
        self.nodes.iter().all(|node| {
            let info: String = redis::cmd("CLUSTER")
                .arg("INFO")
                .query(&mut node.connection())
                .unwrap_or_default();
            info.contains("cluster_state:ok")
        })
    }

    /// The URL of one node: a client finds the others from it.
    pub fn url(&self) -> String {
        self.nodes[0].url()
    }

    /// The number of keys each node holds.
    pub fn keys_by_node(&self) -> Vec<u64> {
        (self.nodes.iter())
            .map(|node| redis::cmd("DBSIZE").query(&mut node.connection()).unwrap())
            .collect()
    }
}
