//! `mcp login NAME [--headless | --no-browser]`, `mcp logout NAME`, `mcp auth status`: OAuth
//! for remote servers. `login` opens the browser (`$BROWSER`, else the system's) at the
//! server's authorization page and receives the answer on a loopback listener; `--no-browser`
//! prints the URL and also takes the address the browser ends on pasted on stdin (a browser on
//! another machine); `--headless` follows the authorization URL itself, for servers that
//! approve without a user, and CI. Tokens go to `~/.mcp-runtime/auth.json` (0600). `status`
//! shows a server waiting for one as `needs login`.

use std::path::Path;
use std::sync::Arc;

use mcp_runtime::auth::{
    browser_with, headless, no_login, open_in_browser, Authorizer, OAuthOptions,
};
use mcp_runtime::config::FileAuthStorage;
use mcp_runtime::config::{provider_for, uses_oauth};
use serde_json::json;

use crate::args::Args;

/// How `login` has the user authorize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginHow {
    /// Opens the browser; the answer comes back on 127.0.0.1.
    Browser,
    /// Prints the URL; the answer comes back on 127.0.0.1 or pasted on stdin.
    Pasted,
    /// Follows the URL itself (servers that approve without a user).
    Headless,
}

/// `login NAME`: connects the server (which then needs a login), logs in, reconnects it.
pub fn login(args: &Args, project: &Path, name: &str, how: LoginHow) -> Result<u8, String> {
    let mut args = args.clone();
    args.servers = vec![name.to_owned()];
    let session = crate::servers::start(&args, project)?;
    let authorizer: Arc<dyn Authorizer> = match how {
        LoginHow::Headless => headless(OAuthOptions::default()),
        LoginHow::Browser => {
            let name = name.to_owned();
            browser_with(
                move |url| {
                    eprintln!("opening your browser to log in to {name}...");
                    open_in_browser(url)
                },
                None,
            )
        }
        LoginHow::Pasted => pasted_authorizer(name),
    };
    let outcome = session.manager.login(name, authorizer);
    let code = match outcome {
        Ok(()) => {
            let tools = mcp_runtime::host::build_tools(&session.manager)
                .iter()
                .filter(|t| t.mcp_identity().is_some_and(|(server, _)| server == name))
                .count();
            outln!("logged in to {name} ({tools} tools)");
            0
        }
        Err(e) => {
            eprintln!("mcp: login to {name} failed: {e}");
            crate::failure::classify(&e).1
        }
    };
    session.manager.close();
    Ok(code)
}

/// Prints the authorization URL and reads pasted lines from stdin (on a thread of its own
/// that ends with the process: a read of stdin cannot be interrupted).
fn pasted_authorizer(name: &str) -> Arc<dyn Authorizer> {
    let (tx, rx) = crossbeam_channel::unbounded();
    let name = name.to_owned();
    let reader = std::sync::Once::new();
    let opener = move |url: &str| {
        eprintln!("To log in to {name}, open this URL in a browser (on any machine):\n\n  {url}\n");
        eprintln!("If that browser is not on this machine, it ends on a page that does not load (an address on 127.0.0.1): paste that address here and press Enter.");
        let tx = tx.clone();
        reader.call_once(move || {
            std::thread::spawn(move || {
                for line in std::io::stdin().lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        });
        Ok(())
    };
    browser_with(opener, Some(rx))
}

/// `logout NAME`: forgets the server's tokens.
pub fn logout(args: &Args, project: &Path, name: &str) -> Result<u8, String> {
    let loaded = crate::discovered(args, project)?;
    let server = loaded
        .discovered
        .iter()
        .find(|d| d.name == name && !d.shadowed)
        .ok_or_else(|| format!("no configured server is named {name:?} (see `mcp servers`)"))?;
    let provider = provider_for(
        &server.config,
        Arc::new(FileAuthStorage::user_default()),
        no_login(),
        OAuthOptions::default(),
    )
    .map_err(|e| e.to_string())?
    .ok_or_else(|| format!("{name} does not use OAuth"))?;
    provider.logout().map_err(|e| e.to_string())?;
    outln!("logged out of {name}");
    Ok(0)
}

/// `auth status`: what is stored for every server OAuth applies to.
pub fn status(args: &Args, project: &Path) -> Result<u8, String> {
    let loaded = crate::discovered(args, project)?;
    let storage = Arc::new(FileAuthStorage::user_default());
    let mut rows = Vec::new();
    for d in loaded
        .discovered
        .iter()
        .filter(|d| !d.shadowed && uses_oauth(&d.config))
    {
        let provider = provider_for(
            &d.config,
            storage.clone(),
            no_login(),
            OAuthOptions::default(),
        );
        let row = match provider {
            Ok(Some(p)) => {
                let s = p.status();
                json!({"name": d.name, "loggedIn": s.logged_in, "issuer": s.issuer,
                       "expiresAt": s.expires_at, "refreshable": s.refreshable, "scopes": s.scopes,
                       "dpop": s.bound})
            }
            Ok(None) => continue,
            Err(e) => json!({"name": d.name, "loggedIn": false, "error": e.to_string()}),
        };
        rows.push(row);
    }
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        );
        return Ok(0);
    }
    if rows.is_empty() {
        outln!("no server can use OAuth (none is remote without its own Authorization)");
    }
    for r in &rows {
        let name = r["name"].as_str().unwrap_or("?");
        match (r["loggedIn"].as_bool(), r["error"].as_str()) {
            (_, Some(e)) => outln!("{name}: {e}"),
            (Some(true), _) => outln!(
                "{name}: logged in (issuer {}, scopes {}{}{})",
                r["issuer"].as_str().unwrap_or("?"),
                r["scopes"]
                    .as_array()
                    .map(|s| s
                        .iter()
                        .filter_map(|v| v.as_str())
                        .collect::<Vec<_>>()
                        .join(" "))
                    .unwrap_or_default(),
                if r["refreshable"].as_bool() == Some(true) {
                    ", refreshable"
                } else {
                    ""
                },
                if r["dpop"].as_bool() == Some(true) {
                    ", bound to a key (DPoP)"
                } else {
                    ""
                }
            ),
            _ => outln!(
                "{name}: not logged in (if the server asks for authorization: mcp login {name})"
            ),
        }
    }
    Ok(0)
}
