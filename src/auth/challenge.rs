//! `WWW-Authenticate` (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1): the `Bearer` challenge of
//! a `401` or `403`, with its `resource_metadata`, `scope` and `error`.

/// The `Bearer` challenge of a `WWW-Authenticate` header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: where the Protected Resource Metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`, split on spaces (the scopes this request needs).
    pub scope: Option<Vec<String>>,
    /// `error` (`invalid_token`, `insufficient_scope`, ...).
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

impl Challenge {
    /// The `Bearer` (or `DPoP`) challenge of a header value, if it has one: the first of them.
    /// Other schemes (`Basic`, ...) in the same header are skipped.
    pub fn parse(header: &str) -> Option<Challenge> {
        // A DPoP challenge carries the same parameters (RFC 9449 §7.1), and a server may send
        // both: each parameter is taken from the first of them that has it.
        let mut found: Option<Challenge> = None;
        let mut in_bearer = false;
        for item in tokenize(header) {
            match item {
                Item::Scheme(s) => {
                    in_bearer = s.eq_ignore_ascii_case("bearer") || s.eq_ignore_ascii_case("dpop");
                    if in_bearer && found.is_none() {
                        found = Some(Challenge::default());
                    }
                }
                Item::Param(k, v) if in_bearer => {
                    let c = found.get_or_insert_with(Challenge::default);
                    let first = |slot: &mut Option<String>, v: String| {
                        slot.get_or_insert(v);
                    };
                    match k.to_ascii_lowercase().as_str() {
                        "resource_metadata" => first(&mut c.resource_metadata, v),
                        "scope" if c.scope.is_none() => {
                            c.scope = Some(v.split_whitespace().map(str::to_owned).collect())
                        }
                        "error" => first(&mut c.error, v),
                        "error_description" => first(&mut c.error_description, v),
                        _ => {}
                    }
                }
                Item::Param(..) => {}
            }
        }
        found
    }

    /// Whether this is a `403 insufficient_scope` challenge.
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

enum Item {
    Scheme(String),
    Param(String, String),
}

/// Splits a header into schemes and their `name=value` parameters.
fn tokenize(header: &str) -> Vec<Item> {
    let mut items = Vec::new();
    let chars: Vec<char> = header.chars().collect();
    let mut i = 0;
    let skip = |i: &mut usize| {
        while *i < chars.len() && (chars[*i].is_whitespace() || chars[*i] == ',') {
            *i += 1;
        }
    };
    loop {
        skip(&mut i);
        if i >= chars.len() {
            break;
        }
        let start = i;
        while i < chars.len() && !chars[i].is_whitespace() && chars[i] != ',' && chars[i] != '=' {
            i += 1;
        }
        let token: String = chars[start..i].iter().collect();
        let mut j = i;
        while j < chars.len() && chars[j] == ' ' {
            j += 1;
        }
        if j < chars.len() && chars[j] == '=' {
            // A parameter (or a token68 ending in '=').
            j += 1;
            while j < chars.len() && chars[j] == ' ' {
                j += 1;
            }
            let value = if j < chars.len() && chars[j] == '"' {
                j += 1;
                let mut v = String::new();
                while j < chars.len() && chars[j] != '"' {
                    if chars[j] == '\\' && j + 1 < chars.len() {
                        j += 1;
                    }
                    v.push(chars[j]);
                    j += 1;
                }
                j += 1;
                v
            } else {
                let vs = j;
                while j < chars.len() && chars[j] != ',' && !chars[j].is_whitespace() {
                    j += 1;
                }
                chars[vs..j].iter().collect()
            };
            items.push(Item::Param(token, value));
            i = j;
        } else {
            items.push(Item::Scheme(token));
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dpop_and_bearer_challenges_together() {
        let c = Challenge::parse(
            r#"DPoP algs="ES256", error="use_dpop_nonce", Bearer resource_metadata="https://m/prm""#,
        )
        .unwrap();
        assert_eq!(c.error.as_deref(), Some("use_dpop_nonce"));
        assert_eq!(c.resource_metadata.as_deref(), Some("https://m/prm"));
        let c = Challenge::parse(r#"DPoP resource_metadata="https://m/prm""#).unwrap();
        assert_eq!(c.resource_metadata.as_deref(), Some("https://m/prm"));
    }

    #[test]
    fn bearer_parameters() {
        let c = Challenge::parse(
            r#"Bearer realm="mcp", error="insufficient_scope", scope="files:read files:write", resource_metadata="https://h/.well-known/oauth-protected-resource""#,
        )
        .unwrap();
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://h/.well-known/oauth-protected-resource")
        );
        assert_eq!(
            c.scope,
            Some(vec!["files:read".into(), "files:write".into()])
        );
        assert!(c.is_insufficient_scope());
    }

    #[test]
    fn other_schemes_are_skipped() {
        let c = Challenge::parse(r#"Basic realm="x", Bearer scope=a, DPoP algs="ES256""#).unwrap();
        assert_eq!(c.scope, Some(vec!["a".into()]));
        assert!(c.resource_metadata.is_none());
        assert!(Challenge::parse(r#"Basic realm="x""#).is_none());
        assert_eq!(Challenge::parse("Bearer"), Some(Challenge::default()));
        let q = Challenge::parse(r#"bearer error_description="a \"quoted\", text""#).unwrap();
        assert_eq!(q.error_description.as_deref(), Some(r#"a "quoted", text"#));
    }
}
