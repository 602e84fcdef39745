//! The words of a tool definition and of a query, as the search index compares them.
//!
//! Text is split at anything that is not a letter or a digit, at `camelCase` humps (`getHTTPUrl`
//! gives `get`, `http`, `url`) and between letters and digits; words are lowercased, common
//! English words dropped, and each is reduced to a rough stem (`files`, `filed` and `filing`
//! all become `fil`) so a query's inflections meet the definition's. [`related`] gives the
//! words a query word commonly stands beside in tool definitions (`fetch` for `get`, `delete`
//! for `remove`): a query is also matched on those, at a lower weight.

use std::hash::Hasher;

/// Words too common in tool definitions and queries to tell tools apart (sorted).
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from",
    "given", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or",
    "our", "should", "so", "than", "that", "the", "their", "them", "then", "there", "these",
    "this", "to", "tool", "tools", "use", "used", "using", "via", "want", "was", "we", "what",
    "when", "which", "will", "with", "would", "you", "your",
];

/// Groups of words that name the same action or thing in tool definitions; a query word of a
/// group is also matched on the others (see [`related`]).
#[rustfmt::skip]
const RELATED: &[&[&str]] = &[
    // Actions.
    &[
        "get", "fetch", "retrieve", "read", "obtain", "load", "show", "view", "look", "display",
        "inspect",
    ],
    &["list", "enumerate", "all", "browse"],
    &[
        "create", "make", "add", "new", "generate", "insert", "open", "submit", "raise",
    ],
    &[
        "delete", "remove", "erase", "drop", "destroy", "clear", "purge", "discard",
    ],
    &[
        "update", "edit", "modify", "change", "set", "alter", "patch", "rename",
    ],
    &[
        "search", "find", "query", "lookup", "look", "grep", "match", "locate", "discover",
    ],
    &["send", "post", "publish", "notify", "email", "mail"],
    &[
        "run", "execute", "invoke", "call", "launch", "start", "trigger", "perform",
    ],
    &["write", "save", "store", "persist", "record"],
    &["stop", "cancel", "abort", "kill", "terminate", "close"],
    &["download", "fetch", "scrape", "crawl"],
    &["upload", "push", "attach"],
    &["click", "press", "tap"],
    &["type", "fill", "enter", "input"],
    &["select", "pick", "choose", "option", "dropdown"],
    &["navigate", "go", "open", "visit"],
    &["convert", "transform", "translate"],
    &["summarize", "summary", "describe", "explain"],
    &[
        "ask",
        "elicit",
        "elicitation",
        "prompt",
        "question",
        "confirm",
    ],
    &[
        "transition",
        "status",
        "state",
        "done",
        "resolve",
        "workflow",
        "progress",
    ],
    &["sum", "add", "total", "calculate", "count", "math"],
    &["think", "reason", "plan", "reflect", "step"],
    // Things.
    &[
        "message",
        "chat",
        "comment",
        "reply",
        "post",
        "thread",
        "conversation",
    ],
    &["file", "document", "doc"],
    &["folder", "directory", "dir"],
    &["tree", "structure", "hierarchy", "recursive", "nested"],
    &["repository", "repo", "project", "codebase"],
    &[
        "page", "website", "site", "url", "web", "link", "internet", "online", "article", "html",
        "webpage",
    ],
    &["screenshot", "capture", "snapshot", "image"],
    &["image", "picture", "photo", "icon"],
    &["time", "clock", "date", "timezone", "hour", "now", "today"],
    &[
        "user",
        "person",
        "member",
        "people",
        "account",
        "teammate",
        "colleague",
        "someone",
        "assignee",
        "owner",
        "contact",
    ],
    &["issue", "ticket", "bug", "report", "defect", "task"],
    &["error", "exception", "crash", "incident", "failure", "issue"],
    &["pull", "merge", "pr"],
    &["commit", "revision", "history", "log"],
    &["log", "event", "trace"],
    &["table", "database", "sql", "schema"],
    &["table", "collection", "dataset"],
    &["entity", "node", "object"],
    &["relation", "link", "edge", "connect"],
    &[
        "observation",
        "fact",
        "note",
        "memory",
        "remember",
        "knowledge",
        "recall",
        "graph",
    ],
    &["stage", "index", "track"],
    &["unstage", "reset", "undo", "revert"],
    &["branch", "checkout", "switch"],
    &["difference", "diff", "compare", "change"],
    &["wiki", "confluence", "notion", "space"],
    &[
        "distance",
        "far",
        "route",
        "direction",
        "travel",
        "drive",
        "commute",
    ],
    &[
        "place",
        "location",
        "near",
        "nearby",
        "local",
        "address",
        "restaurant",
        "business",
        "venue",
        "map",
    ],
    &[
        "pod",
        "container",
        "deployment",
        "cluster",
        "namespace",
        "kubernetes",
    ],
    &[
        "config",
        "configuration",
        "setting",
        "option",
        "variable",
        "environment",
        "env",
    ],
    &["calendar", "meeting", "schedule", "appointment"],
    &["documentation", "docs", "reference", "manual", "guide"],
    &["expire", "expiry", "expiration", "ttl"],
    &["cache", "key", "value"],
];

/// [`RELATED`], stemmed as [`words`] stems (made once).
fn related_stems() -> &'static [Vec<String>] {
    static STEMS: std::sync::OnceLock<Vec<Vec<String>>> = std::sync::OnceLock::new();
    STEMS.get_or_init(|| {
        RELATED
            .iter()
            .map(|group| group.iter().map(|w| stem(w)).collect())
            .collect()
    })
}

/// The words of `text`, stemmed, in order (stop words left out).
pub(crate) fn words(text: &str) -> impl Iterator<Item = String> {
    let mut out = Vec::new();
    each_word(text, |w| out.push(w.to_owned()));
    out.into_iter()
}

/// Calls `f` with each word of `text`, stemmed, in order (stop words left out), without an
/// allocation per word.
pub(crate) fn each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut word = String::new();
    each_piece(text, |piece| {
        word.clear();
        if piece.is_ascii() {
            word.push_str(piece);
            word.make_ascii_lowercase();
        } else {
            word.extend(piece.chars().flat_map(char::to_lowercase));
        }
        if !is_stop_word(&word) {
            stem_in_place(&mut word);
            f(&word);
        }
    });
}

/// Whether `word` is one of [`STOP_WORDS`] (most words are longer than any of them).
fn is_stop_word(word: &str) -> bool {
    word.len() <= 6
        && STOP_WORDS
            .iter()
            .any(|w| w.len() == word.len() && *w == word)
}

/// Calls `f` with each piece of `text` split at non-alphanumerics, camel humps
/// (`getHTTPUrl` → `get`, `HTTP`, `Url`) and letter/digit changes (`utf8` → `utf`, `8`).
fn each_piece(text: &str, mut f: impl FnMut(&str)) {
    if text.is_ascii() {
        return each_ascii_piece(text, f);
    }
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        let mut chars = word.char_indices().peekable();
        let mut start = 0;
        let mut prev: Option<char> = None;
        while let Some((at, c)) = chars.next() {
            if let Some(p) = prev {
                let next_lower = chars.peek().is_some_and(|(_, n)| n.is_lowercase());
                let cut = (p.is_lowercase() && c.is_uppercase())
                    || (p.is_uppercase() && c.is_uppercase() && next_lower)
                    || (p.is_alphabetic() != c.is_alphabetic());
                if cut {
                    f(&word[start..at]);
                    start = at;
                }
            }
            prev = Some(c);
        }
        if start < word.len() {
            f(&word[start..]);
        }
    }
}

/// [`each_piece`] for ASCII text, a byte at a time.
fn each_ascii_piece(text: &str, mut f: impl FnMut(&str)) {
    let b = text.as_bytes();
    let mut start: Option<usize> = None;
    for (i, &c) in b.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if let Some(s) = start.take() {
                f(&text[s..i]);
            }
            continue;
        }
        let Some(s) = start else {
            start = Some(i);
            continue;
        };
        let p = b[i - 1];
        let next_lower = b.get(i + 1).is_some_and(u8::is_ascii_lowercase);
        let cut = (p.is_ascii_lowercase() && c.is_ascii_uppercase())
            || (p.is_ascii_uppercase() && c.is_ascii_uppercase() && next_lower)
            || (p.is_ascii_alphabetic() != c.is_ascii_alphabetic());
        if cut {
            f(&text[s..i]);
            start = Some(i);
        }
    }
    if let Some(s) = start {
        f(&text[s..]);
    }
}

/// A rough English stem: plural and verb endings and a final `e` off, a doubled final consonant
/// single (`running` → `run`). Enough for a query's inflections to meet a definition's; words
/// of three letters or fewer stay as they are.
pub(crate) fn stem(word: &str) -> String {
    let mut w = word.to_owned();
    stem_in_place(&mut w);
    w
}

/// [`stem`], in place.
fn stem_in_place(w: &mut String) {
    if w.len() <= 3 || !w.is_ascii() {
        return;
    }
    if w.len() > 6 && w.ends_with("ly") {
        w.truncate(w.len() - 2);
    }
    if w.ends_with("ies") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.ends_with("sses") || w.ends_with("xes") || w.ends_with("ches") {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.pop();
    }
    for ending in ["ing", "ed"] {
        if w.len() > ending.len() + 2 && w.ends_with(ending) {
            w.truncate(w.len() - ending.len());
            let b = w.as_bytes();
            let n = b.len();
            if n >= 2 && b[n - 1] == b[n - 2] && !matches!(b[n - 1], b'l' | b's' | b'z' | b'e') {
                w.pop();
            }
            break;
        }
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    } else if w.len() > 3 && w.ends_with('y') {
        w.pop();
        w.push('i');
    }
}

/// The other words (stemmed) of every group of [`RELATED`] whose stem `stemmed` is.
pub(crate) fn related(stemmed: &str) -> impl Iterator<Item = &'static str> + '_ {
    related_stems()
        .iter()
        .filter(move |group| group.iter().any(|w| w == stemmed))
        .flat_map(|group| group.iter().map(String::as_str))
        .filter(move |w| *w != stemmed)
}

/// A name as compared for exact and prefix matches: lowercase letters and digits only
/// (`git_status`, `gitStatus` and `git-status` are all `gitstatus`).
pub(crate) fn squashed(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The longest line of a description the catalogue shows, in characters.
const ONE_LINE: usize = 100;

/// The first sentence (or line) of a description, at most [`ONE_LINE`] characters.
pub(crate) fn one_line(description: &str) -> String {
    let first = description.trim().lines().next().unwrap_or("");
    let sentence = match first.find(". ") {
        Some(end) => &first[..=end],
        None => first,
    };
    let sentence = sentence.trim();
    if sentence.chars().count() <= ONE_LINE {
        return sentence.to_owned();
    }
    let cut: String = sentence.chars().take(ONE_LINE - 1).collect();
    format!("{}…", cut.trim_end())
}

/// FNV-1a: the words of definitions are short and not an attacker's to choose in a way that
/// matters here (a collision costs time, never a wrong answer), so the standard library's
/// DoS-resistant hash is not needed where every word of every definition is looked up.
#[derive(Default)]
pub(crate) struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<String> {
        words(text).collect()
    }

    #[test]
    fn names_split_into_words() {
        assert_eq!(all("read_text_file"), ["read", "text", "fil"]);
        assert_eq!(
            all("browser-take-screenshot"),
            ["browser", "tak", "screenshot"]
        );
        assert_eq!(all("getHTTPUrl"), ["get", "http", "url"]);
        assert_eq!(all("listIssues2"), ["list", "issu", "2"]);
        assert_eq!(all("The path of the file to read"), ["path", "fil", "read"]);
    }

    #[test]
    fn inflections_meet() {
        for (a, b) in [
            ("files", "file"),
            ("creating", "create"),
            ("created", "creates"),
            ("running", "run"),
            ("directories", "directory"),
            ("searches", "search"),
            ("commits", "commit"),
            ("entities", "entity"),
            ("staged", "stage"),
            ("recursively", "recursive"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} / {b}");
        }
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("address"), "address");
        assert_eq!(stem("url"), "url");
    }

    #[test]
    fn related_words_meet_in_any_inflection() {
        assert!(related(&stem("removing")).any(|w| w == stem("deletes")));
        assert!(related(&stem("folders")).any(|w| w == stem("directory")));
        assert_eq!(related("zebra").count(), 0);
    }

    #[test]
    fn ascii_and_unicode_text_split_alike() {
        for text in [
            "getHTTPUrl read_text_file",
            "listIssues2 browser-take-screenshot",
            "A.B c",
        ] {
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            each_ascii_piece(text, |p| fast.push(p.to_owned()));
            // The general path, forced by a non-ASCII word at the end.
            each_piece(&format!("{text} é"), |p| slow.push(p.to_owned()));
            assert_eq!(slow.pop().as_deref(), Some("é"));
            assert_eq!(fast, slow, "{text}");
        }
        assert_eq!(all("naïve café"), ["naïve", "café"]);
    }

    #[test]
    fn stop_words_are_sorted() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(STOP_WORDS.iter().all(|w| w.len() <= 6 && is_stop_word(w)));
    }

    #[test]
    fn squashed_names() {
        assert_eq!(squashed("git_status"), "gitstatus");
        assert_eq!(squashed("gitStatus"), "gitstatus");
        assert_eq!(squashed("mcp_git_git-status"), "mcpgitgitstatus");
    }
}
