//! The authorization server's side of the test server: `/authorize` and `/token` (every grant,
//! every client authentication method, checked as a real AS would).

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::*;

pub(super) fn authorize(state: &State, script: &Script, req: &Seen, issuer: &str) -> Answer {
    let q = &req.query;
    let get = |k: &str| q.get(k).cloned().unwrap_or_default();
    let redirect_uri = get("redirect_uri");
    let client_id = get("client_id");
    let known = script.clients.iter().any(|c| c.id == client_id) || client_id.starts_with("http");
    if !known || get("code_challenge_method") != "S256" || get("response_type") != "code" {
        return (400, Vec::new(), "bad authorization request".into());
    }
    let mut params = vec![("state".to_owned(), get("state"))];
    match script.iss {
        Iss::Correct => params.push(("iss".into(), issuer.to_owned())),
        Iss::Wrong => params.push(("iss".into(), "https://evil.example".into())),
        Iss::Absent => {}
    }
    if script.deny {
        params.push(("error".into(), "access_denied".into()));
        params.push(("error_description".into(), "the user said no".into()));
    } else {
        let code = format!(
            "code-{}-{}",
            state.next.fetch_add(1, Ordering::SeqCst),
            random()
        );
        state.handed_out.lock().unwrap().push(code.clone());
        state.codes.lock().unwrap().insert(
            code.clone(),
            Code {
                client_id,
                challenge: get("code_challenge"),
                redirect_uri: redirect_uri.clone(),
                scope: get("scope"),
                resource: get("resource"),
            },
        );
        params.push(("code".into(), code));
    }
    let query: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{k}={}", enc(v)))
        .collect();
    redirect(format!("{redirect_uri}?{}", query.join("&")))
}

fn random() -> String {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 12];
    ring::rand::SystemRandom::new().fill(&mut b).unwrap();
    URL_SAFE_NO_PAD.encode(b)
}

fn oauth_error(code: &str) -> Answer {
    json_answer(
        400,
        json!({"error": code, "error_description": format!("test AS: {code}")}),
    )
}

/// Authenticates the client of a token request: its id, or the error.
fn client_of(script: &Script, req: &Seen, issuer: &str) -> Result<String, Answer> {
    let f = &req.form;
    if let Some(basic) = req
        .headers
        .get("authorization")
        .and_then(|a| a.strip_prefix("Basic "))
    {
        let pair =
            String::from_utf8(STANDARD.decode(basic).unwrap_or_default()).unwrap_or_default();
        let (id, secret) = pair.split_once(':').unwrap_or(("", ""));
        let (id, secret) = (decode(id), decode(secret));
        return match script.clients.iter().find(|c| c.id == id) {
            Some(c)
                if c.method == "client_secret_basic" && c.secret.as_deref() == Some(&secret) =>
            {
                Ok(id)
            }
            _ => Err(oauth_error("invalid_client")),
        };
    }
    let id = f.get("client_id").cloned().unwrap_or_default();
    let Some(client) = script
        .clients
        .iter()
        .find(|c| c.id == id)
        .cloned()
        .or_else(|| id.starts_with("http").then(|| Client::public(&id)))
    else {
        return Err(oauth_error("invalid_client"));
    };
    match client.method.as_str() {
        "none" if !f.contains_key("client_secret") && !f.contains_key("client_assertion") => Ok(id),
        "client_secret_post" if f.get("client_secret") == client.secret.as_ref() => Ok(id),
        "private_key_jwt" => {
            let jwt = f.get("client_assertion").cloned().unwrap_or_default();
            let (alg, key) = client.public_key.clone().unwrap();
            if verify_assertion(&jwt, &alg, &key, &id, issuer) {
                Ok(id)
            } else {
                Err(oauth_error("invalid_client"))
            }
        }
        _ => Err(oauth_error("invalid_client")),
    }
}

fn verify_assertion(jwt: &str, alg: &str, key: &[u8], client_id: &str, issuer: &str) -> bool {
    use ring::signature;
    let Some((input, sig)) = jwt.rsplit_once('.') else {
        return false;
    };
    let Ok(sig) = URL_SAFE_NO_PAD.decode(sig) else {
        return false;
    };
    let algorithm: &dyn signature::VerificationAlgorithm = match alg {
        "ES256" => &signature::ECDSA_P256_SHA256_FIXED,
        _ => &signature::RSA_PKCS1_2048_8192_SHA256,
    };
    if signature::UnparsedPublicKey::new(algorithm, key)
        .verify(input.as_bytes(), &sig)
        .is_err()
    {
        return false;
    }
    let claims: Value = input
        .split('.')
        .nth(1)
        .and_then(|c| URL_SAFE_NO_PAD.decode(c).ok())
        .and_then(|c| serde_json::from_slice(&c).ok())
        .unwrap_or(Value::Null);
    let header: Value = input
        .split('.')
        .next()
        .and_then(|c| URL_SAFE_NO_PAD.decode(c).ok())
        .and_then(|c| serde_json::from_slice(&c).ok())
        .unwrap_or(Value::Null);
    header["alg"] == alg
        && claims["iss"] == client_id
        && claims["sub"] == client_id
        && claims["aud"] == issuer
}

fn grant(state: &State, script: &Script, scope: &str, refresh: bool) -> Answer {
    let scope: Vec<&str> = scope
        .split_whitespace()
        .filter(|s| {
            script
                .grantable
                .as_ref()
                .is_none_or(|g| g.iter().any(|x| x == s))
        })
        .collect();
    let scope = scope.join(" ");
    let n = state.next.fetch_add(1, Ordering::SeqCst);
    let access = format!("at-{n}-{}", random());
    state.handed_out.lock().unwrap().push(access.clone());
    state.access.lock().unwrap().insert(
        access.clone(),
        Issued {
            scope: scope.clone(),
            expires: Instant::now() + Duration::from_secs(script.expires_in),
        },
    );
    let mut body = json!({"access_token": access, "token_type": "Bearer", "expires_in": script.expires_in, "scope": scope});
    if refresh && script.refresh_tokens {
        let r = format!("rt-{n}-{}", random());
        state.handed_out.lock().unwrap().push(r.clone());
        state
            .refresh
            .lock()
            .unwrap()
            .insert(r.clone(), (scope.clone(), String::new()));
        body["refresh_token"] = json!(r);
    }
    json_answer(200, body)
}

pub(super) fn token(state: &State, script: &Script, req: &Seen, issuer: &str) -> Answer {
    if let Some((status, ctype, body)) = &script.token_canned {
        return (
            *status,
            vec![("Content-Type".into(), ctype.clone())],
            body.clone(),
        );
    }
    let f = &req.form;
    let get = |k: &str| f.get(k).cloned().unwrap_or_default();
    let grant_type = get("grant_type");
    if grant_type == "urn:ietf:params:oauth:grant-type:token-exchange" {
        // The IdP's side of SEP-990.
        if Some(get("subject_token")) != script.id_token
            || get("requested_token_type") != "urn:ietf:params:oauth:token-type:id-jag"
            || get("audience") != issuer
        {
            return oauth_error("invalid_grant");
        }
        let jag = format!("jag-{}", random());
        state.handed_out.lock().unwrap().push(jag.clone());
        state.jags.lock().unwrap().push(jag.clone());
        return json_answer(
            200,
            json!({"access_token": jag, "token_type": "N_A",
            "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "expires_in": 300}),
        );
    }
    let client = match client_of(script, req, issuer) {
        Ok(c) => c,
        Err(e) => return e,
    };
    match grant_type.as_str() {
        "authorization_code" => {
            let Some(code) = state.codes.lock().unwrap().remove(&get("code")) else {
                return oauth_error("invalid_grant");
            };
            let verifier = get("code_verifier");
            let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
            if code.client_id != client
                || code.challenge != challenge
                || code.redirect_uri != get("redirect_uri")
                || code.resource != get("resource")
            {
                return oauth_error("invalid_grant");
            }
            grant(state, script, &code.scope, true)
        }
        "refresh_token" => {
            let old = get("refresh_token");
            let entry = state.refresh.lock().unwrap().get(&old).cloned();
            let Some((scope, _)) = entry else {
                return oauth_error("invalid_grant");
            };
            if script.rotate_refresh {
                state.refresh.lock().unwrap().remove(&old);
                grant(state, script, &scope, true)
            } else {
                grant(state, script, &scope, false)
            }
        }
        "client_credentials" => grant(state, script, &get("scope"), false),
        "urn:ietf:params:oauth:grant-type:jwt-bearer" => {
            if !state.jags.lock().unwrap().contains(&get("assertion")) {
                return oauth_error("invalid_grant");
            }
            grant(state, script, &get("scope"), false)
        }
        _ => oauth_error("unsupported_grant_type"),
    }
}
