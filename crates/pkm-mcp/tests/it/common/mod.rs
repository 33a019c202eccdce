//! Shared harness of the integration tests: an in-process HTTP server over a temp copy of the
//! example vault (`http`), the real binary over stdio (`stdio`), and vault helpers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

#[path = "../../../../../tests/support/copy_dir.rs"]
mod copy_dir;
pub mod http;
pub mod redis;
pub mod stdio;

pub use copy_dir::copy_dir;

pub use http::*;
pub use redis::Redis;

/// Serializes the tests that start several server processes (the shared-vault tests, the crash
/// harness): on a two-core machine their contention, not the servers, would decide whether an edit
/// shows within its deadline.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// A temp dir holding a copy of the example vault at `<dir>/vault`.
pub fn temp_example_vault() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&example_vault(), &dir.path().join("vault"));
    dir
}

/// Starts `cmd` (a `stratum-mcp --http ...` with `--bind 127.0.0.1:0`) and returns the child and
/// its `http://HOST:PORT` from the `listening on` line; its log is drained from then on.
pub fn spawn_http(mut cmd: std::process::Command) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let url = loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "http server exited");
        if let Some(u) = line.trim().strip_prefix("listening on ") {
            break u.to_owned();
        }
    };
    // Keep draining its log so it never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut sink = String::new();
        while err.read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
    (child, url)
}

/// A free loopback port (bound and released: a server told to use it can start later).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `stratum-mcp ARGS` to the end and returns its standard output, trimmed; fails the test
/// with its standard error when it does not exit 0.
pub fn cli<S: AsRef<std::ffi::OsStr>>(args: impl IntoIterator<Item = S>) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stratum-mcp"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Stops a server process as a service manager would: SIGTERM, then [`reap`].
pub fn terminate(child: &mut std::process::Child) {
    let pid = rustix::process::Pid::from_child(child);
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    reap(child);
}

/// Gives a server told to stop (SIGTERM, or stdin closed) up to 5 s to exit on its own, so an
/// instrumented binary writes its coverage profile; SIGKILL after that.
pub fn reap(child: &mut std::process::Child) {
    use std::time::{Duration, Instant};
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}
