//! The test server's misbehaving tools: wrong ids, crashes, closed pipes, replies that cannot
//! be parsed or are too large, unsolicited errors, and a server that acts between calls.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{json, Value};

use super::Server;

impl Server {
    /// Answers a misbehaving tool's call (or acts on its own after answering); false when
    /// `name` is not one.
    pub(crate) fn misbehave(&self, id: &Value, name: &str, args: &Value, params: &Value) -> bool {
        match name {
            "later" => {
                // Answers now, then acts on its own: what a server sends between calls.
                self.text(id, "ok");
                std::thread::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(50)));
                if args["what"] == "crash" {
                    std::process::exit(3);
                }
                self.extra_tool.store(true, Ordering::SeqCst);
                self.notify("notifications/tools/list_changed", json!({}));
            }
            "stop_reading" => {
                self.stop_reading.store(true, Ordering::SeqCst);
                self.text(id, "not reading any more");
            }
            "hang" => {
                // On stderr too (the client logs it at debug), for a test without a token.
                eprintln!("hang: the call arrived");
                // With a progress token, say "started" first, so a test knows the call arrived.
                if let Some(t) = params.pointer("/_meta/progressToken") {
                    self.notify(
                        "notifications/progress",
                        json!({"progressToken": t, "progress": 0}),
                    );
                }
            }
            "wrong_id" => self.text(&json!(999_999), "for nobody"),
            "close_stdout" => {
                let _out = self.out.lock().unwrap();
                eprintln!("closing stdout");
                // SAFETY: closing our own stdout, under its lock: nothing writes it any more.
                unsafe { libc::close(1) };
                std::mem::forget(_out);
            }
            "bad_utf8" => {
                let mut line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"").into_bytes();
                line.extend_from_slice(b"\xff\xfe\"}]}}\n");
                let mut out = self.out.lock().unwrap();
                let _ = out.write_all(&line);
                let _ = out.flush();
            }
            "deep" => {
                let depth = args["depth"].as_u64().unwrap_or(200) as usize;
                let line = format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[],\"x\":{}1{}}}}}",
                    "[".repeat(depth),
                    "]".repeat(depth)
                );
                self.raw(&line);
            }
            "unsolicited_errors" => {
                let count = args["count"].as_u64().unwrap_or(1);
                let bad = args.get("id").cloned().unwrap_or(Value::Null);
                for i in 0..count {
                    self.send(json!({"jsonrpc": "2.0", "id": bad, "error": {"code": -32600, "message": format!("invalid request {i}")}}));
                }
                self.text(id, "sent");
            }
            "crash" => {
                eprintln!("about to crash");
                std::process::exit(3);
            }
            // N tiny text blocks in one result (`blocks`), or a structured result of N numbers
            // (`numbers`): replies whose parsed form is many times their text.
            "wide" | "numbers" => {
                let count = args["count"].as_u64().unwrap_or(1000) as usize;
                let (head, item, tail) = if name == "wide" {
                    ("{\"content\":[", "{\"type\":\"text\",\"text\":\"x\"}", "]}")
                } else {
                    ("{\"content\":[],\"structuredContent\":{\"v\":[", "1", "]}}")
                };
                let mut line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{head}");
                line.reserve(count * (item.len() + 1) + 16);
                for i in 0..count {
                    if i > 0 {
                        line.push(',');
                    }
                    line.push_str(item);
                }
                line.push_str(tail);
                line.push('}');
                self.raw(&line);
            }
            "huge" => {
                let bytes = args["bytes"].as_u64().unwrap_or(1 << 20) as usize;
                let mut out = self.out.lock().unwrap();
                let head = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"");
                let _ = out.write_all(head.as_bytes());
                let chunk = vec![b'a'; 1 << 20];
                let mut left = bytes;
                while left > 0 {
                    let n = left.min(chunk.len());
                    if out.write_all(&chunk[..n]).is_err() {
                        return true;
                    }
                    left -= n;
                }
                let _ = out.write_all(b"\"}]}}\n");
                let _ = out.flush();
            }
            _ => return false,
        }
        true
    }
}
