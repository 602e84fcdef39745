//! The test server's command line (the flags are listed in `test_server.rs`).

use super::sleep_forever;

/// What the command line asked for.
#[derive(Default)]
pub struct Flags {
    pub tools: usize,
    pub page_size: Option<usize>,
    pub repeat_cursor: bool,
    pub banner: bool,
    pub stderr_flood: usize,
    pub string_ids: bool,
    pub silent_initialize: bool,
    pub exit_on_initialize: Option<i32>,
    pub protocol: Option<String>,
    pub no_tools_capability: bool,
    pub grandchild: bool,
    pub ignore_stdin_eof: bool,
    pub ignore_sigterm: bool,
    pub tag: Option<String>,
    pub hold_port: Option<u16>,
    pub hold_method: Option<String>,
    pub typed_tool: bool,
    pub features: bool,
    pub filesystem: Option<String>,
    pub catalogue: Option<String>,
    pub text_tool: bool,
    pub app: bool,
    pub hostile_start: bool,
}

impl Flags {
    /// Reads the flags from the command line; exits (2) on an unknown one.
    pub fn parse() -> Flags {
        let mut flags = Flags::default();
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            let mut num = || {
                args.next()
                    .and_then(|v| v.parse::<usize>().ok())
                    .unwrap_or(0)
            };
            match a.as_str() {
                "--tools" => flags.tools = num(),
                "--page-size" => flags.page_size = Some(num()),
                "--repeat-cursor" => flags.repeat_cursor = true,
                "--banner" => flags.banner = true,
                "--stderr-flood" => flags.stderr_flood = num(),
                "--string-ids" => flags.string_ids = true,
                "--silent-initialize" => flags.silent_initialize = true,
                "--exit-on-initialize" => flags.exit_on_initialize = Some(num() as i32),
                "--protocol" => flags.protocol = args.next(),
                "--no-tools-capability" => flags.no_tools_capability = true,
                "--grandchild" => flags.grandchild = true,
                "--ignore-stdin-eof" => flags.ignore_stdin_eof = true,
                "--ignore-sigterm" => flags.ignore_sigterm = true,
                "--tag" => flags.tag = args.next(),
                "--hold-port" => flags.hold_port = Some(num() as u16),
                "--hold-method" => flags.hold_method = args.next(),
                "--typed-tool" => flags.typed_tool = true,
                "--features" => flags.features = true,
                "--sleep" => sleep_forever(),
                "--filesystem" => flags.filesystem = args.next(),
                "--catalogue" => flags.catalogue = args.next(),
                "--text-tool" => flags.text_tool = true,
                "--app" => flags.app = true,
                "--hostile-start" => flags.hostile_start = true,
                "--attempt" => {
                    // One attempt (hostile.rs) and exit: 0 when it succeeded, 1 when refused.
                    let what = args.next().unwrap_or_default();
                    let what = serde_json::from_str(&what).unwrap_or_default();
                    let outcome = super::hostile::attempt(&what);
                    println!("{outcome}");
                    std::process::exit(if outcome.starts_with("ok") { 0 } else { 1 });
                }
                other => {
                    eprintln!("unknown flag {other}");
                    std::process::exit(2);
                }
            }
        }
        flags
    }
}
