//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, client mode) against
//! our client as a user drives it: every scenario of the two pinned suite versions, one test
//! case each, through `tests/conformance/driver.mjs` and the `mcp` CLI.
//!
//! The runner starts each scenario's own servers on localhost, runs the driver with their URL,
//! and passes a scenario when none of its checks fails or warns and the client exits 0; a
//! scenario whose checks were all skipped (nothing exercised) does not pass here. Scenarios that
//! belong to an open piece of work are expected failures, named with it: such a test fails the
//! day its scenario passes, so the list shrinks as the work lands. `listed_scenarios_are_run`
//! checks, per suite, that the cases below are exactly what `conformance list --client` prints.
//!
//! Needs Node 22 (the suite imports what Node 20 lacks) and the suites, from npm into
//! `.interop/` on first use; skips, saying so, where npm cannot be had, and fails in CI.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::npm;

/// The suite the TypeScript SDK's results are published against (2025-06-18 and 2025-11-25).
const STABLE: &str = "0.1.16";
/// The suite with the 2026-07-28 scenarios and the extensions.
const ALPHA: &str = "0.2.0-alpha.12";

/// The runner's entry script of suite `version`, installed on first use.
fn suite(version: &str) -> Option<PathBuf> {
    npm::install(
        &format!("conformance-{version}"),
        &[&format!("@modelcontextprotocol/conformance@{version}")],
        "node_modules/@modelcontextprotocol/conformance/dist/index.js",
    )
}

/// The runner of suite `version` under Node 22, or `None` (said) where it cannot be had.
fn runner(version: &str) -> Option<(PathBuf, PathBuf)> {
    let node = npm::node22()?;
    let script = suite(version)?;
    Some((node, script))
}

/// What one scenario run showed.
struct Outcome {
    exit: Option<i32>,
    passed_checks: usize,
    overall_passed: bool,
    text: String,
}

impl Outcome {
    fn passed(&self) -> bool {
        self.exit == Some(0) && self.overall_passed && self.passed_checks > 0
    }
}

fn run_scenario(version: &str, scenario: &str, spec: Option<&str>) -> Option<Outcome> {
    let (node, script) = runner(version)?;
    let work = common::temp_dir(&format!(
        "conformance-{version}-{}-{}",
        scenario.replace('/', "_"),
        spec.unwrap_or("default")
    ));
    let driver = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/driver.mjs");
    let mut cmd = Command::new(&node);
    cmd.arg(&script)
        .args(["client", "--scenario", scenario, "--timeout", "30000"])
        .arg("--command")
        .arg(format!("{} {}", node.display(), driver.display()))
        .arg("-o")
        .arg(work.join("results"))
        .current_dir(&work)
        .env("MCP_CLI", common::cli_path())
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG");
    if let Some(spec) = spec {
        cmd.args(["--spec-version", spec]);
    }
    let out = npm::output_within(cmd, Duration::from_secs(120))
        .unwrap_or_else(|| panic!("{scenario}: the conformance runner did not end within 120 s"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let text = strip_ansi(&format!("{stdout}\n{stderr}"));
    let passed_checks = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Passed: "))
        .and_then(|rest| rest.split('/').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    let _ = std::fs::remove_dir_all(&work);
    Some(Outcome {
        exit: out.status.code(),
        passed_checks,
        overall_passed: text.contains("OVERALL: PASSED"),
        text,
    })
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Runs `scenario` of suite `version` (at `spec`, or the version the suite infers) and checks
/// it passes, or, when `expected` names the open work that owns it, that it does not yet.
fn check(version: &str, scenario: &str, spec: Option<&str>, expected: Option<&str>) {
    let Some(outcome) = run_scenario(version, scenario, spec) else {
        return;
    };
    let at = spec.map(|s| format!(" at {s}")).unwrap_or_default();
    // For `tests/conformance/table.sh` (CONTRIBUTING.md's table), shown with `--nocapture`.
    println!(
        "CONFORMANCE\t{version}\t{}\t{scenario}\t{}",
        spec.unwrap_or("default"),
        if outcome.passed() { "passed" } else { "failed" }
    );
    match (outcome.passed(), expected) {
        (true, None) => {}
        (false, Some(why)) => {
            eprintln!("{scenario}{at} (suite {version}): an expected failure: {why}");
        }
        (true, Some(why)) => panic!(
            "{scenario}{at} (suite {version}) now passes: remove it from the expected failures ({why})"
        ),
        (false, None) => panic!(
            "{scenario}{at} (suite {version}) failed (exit {:?}, {} checks passed):\n{}",
            outcome.exit, outcome.passed_checks, outcome.text
        ),
    }
}

/// The scenarios `conformance list --client` prints for suite `version`, with their versions.
fn listed(version: &str) -> Option<Vec<(String, String)>> {
    let (node, script) = runner(version)?;
    let mut cmd = Command::new(node);
    cmd.arg(script)
        .args(["list", "--client"])
        .env("NO_COLOR", "1");
    let out = npm::output_within(cmd, Duration::from_secs(60)).expect("conformance list");
    assert!(out.status.success(), "conformance list failed");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    Some(
        text.lines()
            .filter_map(|l| l.trim().strip_prefix("- "))
            .map(|l| match l.split_once(' ') {
                Some((name, versions)) => (name.to_owned(), versions.to_owned()),
                None => (l.to_owned(), String::new()),
            })
            .collect(),
    )
}

/// One test case per scenario; `expect "why"` marks an expected failure.
macro_rules! scenarios {
    ($suite:ident, $version:expr, $spec:expr, { $($test:ident => $name:literal $(expect $why:expr)?;)* }) => {
        mod $suite {
            /// The scenarios of this run, in the suite's order.
            pub const NAMES: &[&str] = &[$($name),*];
            $(
                #[test]
                fn $test() {
                    #[allow(unused_mut, unused_assignments)]
                    let mut expected: Option<&str> = None;
                    $(expected = Some($why);)?
                    super::check($version, $name, $spec, expected);
                }
            )*
        }
    };
}

scenarios!(stable, super::STABLE, None, {
    initialize => "initialize";
    tools_call => "tools_call";
    elicitation_sep1034_client_defaults => "elicitation-sep1034-client-defaults";
    sse_retry => "sse-retry";
    auth_metadata_default => "auth/metadata-default";
    auth_metadata_var1 => "auth/metadata-var1";
    auth_metadata_var2 => "auth/metadata-var2";
    auth_metadata_var3 => "auth/metadata-var3";
    auth_basic_cimd => "auth/basic-cimd";
    auth_scope_from_www_authenticate => "auth/scope-from-www-authenticate";
    auth_scope_from_scopes_supported => "auth/scope-from-scopes-supported";
    auth_scope_omitted_when_undefined => "auth/scope-omitted-when-undefined";
    auth_scope_step_up => "auth/scope-step-up";
    auth_scope_retry_limit => "auth/scope-retry-limit";
    auth_token_endpoint_auth_basic => "auth/token-endpoint-auth-basic";
    auth_token_endpoint_auth_post => "auth/token-endpoint-auth-post";
    auth_token_endpoint_auth_none => "auth/token-endpoint-auth-none";
    auth_pre_registration => "auth/pre-registration";
    auth_2025_03_26_oauth_metadata_backcompat => "auth/2025-03-26-oauth-metadata-backcompat";
    auth_2025_03_26_oauth_endpoint_fallback => "auth/2025-03-26-oauth-endpoint-fallback";
    auth_resource_mismatch => "auth/resource-mismatch";
    auth_offline_access_scope => "auth/offline-access-scope";
    auth_offline_access_not_supported => "auth/offline-access-not-supported";
    auth_client_credentials_jwt => "auth/client-credentials-jwt";
    auth_client_credentials_basic => "auth/client-credentials-basic";
    auth_cross_app_access_complete_flow => "auth/cross-app-access-complete-flow";
});

scenarios!(alpha, super::ALPHA, None, {
    initialize => "initialize";
    tools_call => "tools_call";
    elicitation_sep1034_client_defaults => "elicitation-sep1034-client-defaults";
    sse_retry => "sse-retry";
    request_metadata => "request-metadata";
    auth_metadata_default => "auth/metadata-default";
    auth_metadata_var1 => "auth/metadata-var1";
    auth_metadata_var2 => "auth/metadata-var2";
    auth_metadata_var3 => "auth/metadata-var3";
    auth_basic_cimd => "auth/basic-cimd";
    auth_scope_from_www_authenticate => "auth/scope-from-www-authenticate";
    auth_scope_from_scopes_supported => "auth/scope-from-scopes-supported";
    auth_scope_omitted_when_undefined => "auth/scope-omitted-when-undefined";
    auth_scope_step_up => "auth/scope-step-up";
    auth_scope_retry_limit => "auth/scope-retry-limit";
    auth_token_endpoint_auth_basic => "auth/token-endpoint-auth-basic";
    auth_token_endpoint_auth_post => "auth/token-endpoint-auth-post";
    auth_token_endpoint_auth_none => "auth/token-endpoint-auth-none";
    auth_pre_registration => "auth/pre-registration";
    auth_2025_03_26_oauth_metadata_backcompat => "auth/2025-03-26-oauth-metadata-backcompat";
    auth_2025_03_26_oauth_endpoint_fallback => "auth/2025-03-26-oauth-endpoint-fallback";
    auth_resource_mismatch => "auth/resource-mismatch";
    auth_offline_access_scope => "auth/offline-access-scope";
    auth_offline_access_not_supported => "auth/offline-access-not-supported";
    auth_authorization_server_migration => "auth/authorization-server-migration";
    auth_iss_supported => "auth/iss-supported";
    auth_iss_not_advertised => "auth/iss-not-advertised";
    auth_iss_supported_missing => "auth/iss-supported-missing";
    auth_iss_wrong_issuer => "auth/iss-wrong-issuer";
    auth_iss_unexpected => "auth/iss-unexpected";
    auth_iss_normalized => "auth/iss-normalized";
    auth_metadata_issuer_mismatch => "auth/metadata-issuer-mismatch";
    auth_client_credentials_jwt => "auth/client-credentials-jwt";
    auth_client_credentials_basic => "auth/client-credentials-basic";
    auth_enterprise_managed_authorization => "auth/enterprise-managed-authorization";
    auth_dpop => "auth/dpop";
    auth_dpop_nonce => "auth/dpop-nonce";
    auth_wif_jwt_bearer => "auth/wif-jwt-bearer";
    sep_2322_client_request_state => "sep-2322-client-request-state";
    http_standard_headers => "http-standard-headers";
    http_custom_headers => "http-custom-headers";
    http_invalid_tool_headers => "http-invalid-tool-headers";
    json_schema_ref_no_deref => "json-schema-ref-no-deref";
    json_schema_2020_12_preservation => "json-schema-2020-12-preservation";
    sep_2640_client_no_prefetch => "sep-2640-client-no-prefetch";
    sep_2640_client_verify_digest => "sep-2640-client-verify-digest";
    sep_2640_client_verify_size => "sep-2640-client-verify-size";
    sep_2640_client_verify_frontmatter => "sep-2640-client-verify-frontmatter";
});

// The scenarios of both wires run once more on the 2026-07-28 (stateless) one: passing on one
// wire says nothing of the other.
scenarios!(alpha_2026, super::ALPHA, Some("2026-07-28"), {
    tools_call => "tools_call";
    auth_metadata_default => "auth/metadata-default";
    auth_metadata_var1 => "auth/metadata-var1";
    auth_metadata_var2 => "auth/metadata-var2";
    auth_metadata_var3 => "auth/metadata-var3";
    auth_basic_cimd => "auth/basic-cimd";
    auth_scope_from_www_authenticate => "auth/scope-from-www-authenticate";
    auth_scope_from_scopes_supported => "auth/scope-from-scopes-supported";
    auth_scope_omitted_when_undefined => "auth/scope-omitted-when-undefined";
    auth_scope_step_up => "auth/scope-step-up";
    auth_scope_retry_limit => "auth/scope-retry-limit";
    auth_token_endpoint_auth_basic => "auth/token-endpoint-auth-basic";
    auth_token_endpoint_auth_post => "auth/token-endpoint-auth-post";
    auth_token_endpoint_auth_none => "auth/token-endpoint-auth-none";
    auth_pre_registration => "auth/pre-registration";
    json_schema_2020_12_preservation => "json-schema-2020-12-preservation";
});

fn assert_same(what: &str, run: &[&str], listed: &[String]) {
    let run: BTreeSet<&str> = run.iter().copied().collect();
    let listed: BTreeSet<&str> = listed.iter().map(String::as_str).collect();
    let dropped: Vec<_> = listed.difference(&run).collect();
    let gone: Vec<_> = run.difference(&listed).collect();
    assert!(
        dropped.is_empty() && gone.is_empty(),
        "{what}: listed but not run: {dropped:?}; run but no longer listed: {gone:?}"
    );
}

#[test]
fn listed_scenarios_are_run() {
    let Some(stable) = listed(STABLE) else {
        return;
    };
    let names: Vec<String> = stable.into_iter().map(|(n, _)| n).collect();
    assert_same(STABLE, stable::NAMES, &names);
    let Some(alpha) = listed(ALPHA) else {
        return;
    };
    let names: Vec<String> = alpha.iter().map(|(n, _)| n.clone()).collect();
    assert_same(ALPHA, alpha::NAMES, &names);
    // Those the suite runs at a dated handshake version by default but that also apply to
    // 2026-07-28.
    let both: Vec<String> = alpha
        .iter()
        .filter(|(_, v)| v.contains("2026-07-28") && v.contains("2025-"))
        .map(|(n, _)| n.clone())
        .collect();
    assert_same(&format!("{ALPHA} at 2026-07-28"), alpha_2026::NAMES, &both);
}
