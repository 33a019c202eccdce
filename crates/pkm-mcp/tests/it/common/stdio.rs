//! `Server`: the real `stratum-mcp --stdio` binary as a child process, with a line-delimited
//! JSON-RPC client that keeps every notification it reads on the way to a response.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

pub struct Server {
    child: Child,
    /// `None` once closed (on drop: the server's cue to exit).
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// Every message without an `id` read so far (`notifications/message` and the like).
    pub notifications: Vec<Value>,
}

impl Server {
    /// Starts the server on `vault` (its log to this test's stderr, warnings only) and initializes.
    pub fn start(vault: &Path) -> Server {
        Self::start_with(vault, "warn", Stdio::inherit())
    }

    pub fn start_with(vault: &Path, rust_log: &str, stderr: Stdio) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_stratum-mcp"));
        cmd.args(["--stdio", "--vault"])
            .arg(vault)
            .env("RUST_LOG", rust_log)
            .stderr(stderr);
        Self::start_command(cmd)
    }

    /// Starts `cmd` (a `stratum-mcp --stdio ...` command line) with piped stdio and initializes.
    pub fn start_command(cmd: Command) -> Server {
        let (s, init) = Self::start_asking(cmd, "2025-06-18");
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
        s
    }

    /// Starts `cmd` and initializes asking for protocol revision `version`; returns the server
    /// and the whole `initialize` response.
    pub fn start_asking(mut cmd: Command, version: &str) -> (Server, Value) {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Server {
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 0,
            notifications: Vec::new(),
        };
        let init = s.request("initialize", json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "tests", "version": "1"}}));
        s.notify("notifications/initialized", json!({}));
        (s, init)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The `stratum-mcp --stdio` command line on `vault`, its log to this test's stderr.
    pub fn command(vault: &Path) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_stratum-mcp"));
        cmd.args(["--stdio", "--vault"])
            .arg(vault)
            .env("RUST_LOG", "warn")
            .stderr(Stdio::inherit());
        cmd
    }

    pub fn send(&mut self, msg: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next message from the server, whatever it is.
    pub fn read(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.stdout.read_line(&mut line).unwrap() > 0,
            "server closed stdout"
        );
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}"))
    }

    /// Reads until the response with `id`, keeping notifications.
    pub fn response(&mut self, id: &Value) -> Value {
        loop {
            let msg = self.read();
            if msg.get("id") == Some(id) {
                return msg;
            }
            if msg.get("id").is_none() {
                self.notifications.push(msg);
            }
        }
    }

    /// Sends a request and returns the whole response object (with `result` or `error`).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(&id)
    }

    /// Sends a request whose `params` are the raw JSON text `params` (numbers serde_json would not
    /// write back as given, such as `18446744073709551616`) and returns the whole response object.
    pub fn request_raw(&mut self, method: &str, params: &str) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        )
        .unwrap();
        stdin.flush().unwrap();
        self.response(&id)
    }

    /// Calls a tool, retrying while the vault is still warming up (VaultLocked).
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        for _ in 0..100 {
            let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
            if r["error"]["code"] == json!(-32006)
                && r["error"]["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains("being indexed")
            {
                std::thread::sleep(std::time::Duration::from_millis(50));
                continue;
            }
            return r;
        }
        panic!("vault never finished warming up")
    }

    /// Calls a tool that must succeed; returns `structuredContent` after checking the text copy.
    pub fn ok(&mut self, tool: &str, args: Value) -> Value {
        let r = self.call(tool, args.clone());
        let result = r
            .get("result")
            .unwrap_or_else(|| panic!("{tool} {args} failed: {r}"));
        let structured = result["structuredContent"].clone();
        let text: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            text, structured,
            "content[0].text is the same object as structuredContent"
        );
        assert_eq!(result["content"][0]["type"], "text");
        structured
    }

    /// Calls a tool that must fail; returns the JSON-RPC error object.
    pub fn err(&mut self, tool: &str, args: Value) -> Value {
        let r = self.call(tool, args.clone());
        let e = r
            .get("error")
            .unwrap_or_else(|| panic!("{tool} {args} should have failed: {r}"))
            .clone();
        assert!(
            e["data"]["kind"].is_string() && e["data"]["hint"].is_string(),
            "{e}"
        );
        let msg = e["message"].as_str().unwrap();
        assert!(
            !msg.contains("/tmp/") && !msg.contains("panicked"),
            "no internals in errors: {msg}"
        );
        e
    }

    /// SIGKILL, no goodbye.
    pub fn kill9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    /// Goodbye as a client says it: stdin closed, and the server exits on its own.
    fn drop(&mut self) {
        self.stdin = None;
        super::reap(&mut self.child);
    }
}
