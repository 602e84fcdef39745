use serde_json::{json, Value};

use super::*;

use crate::tool::test_tools::tool;

fn path() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string", "description": "Where the file is"}}})
}

fn index() -> ToolIndex {
    let mut index = ToolIndex::new();
    index.sync([
        tool("read_file", "Read the complete contents of a file from the file system.", path()),
        tool("write_file", "Create a new file or overwrite an existing one.", path()),
        tool("delete_file", "Deletes a file.", path()),
        tool("list_directory", "Get a detailed listing of all files and directories in a path.", path()),
        tool("git_status", "Shows the working tree status", json!({"type": "object", "properties": {"repo_path": {"type": "string"}}})),
        tool("git_log", "Shows the commit logs", json!({"type": "object", "properties": {"max_count": {"type": "integer"}}})),
        tool("get_current_time", "Get current time in a specific timezone", json!({"type": "object", "properties": {"timezone": {"type": "string", "description": "IANA timezone name"}}})),
        tool("browserTakeScreenshot", "Take a screenshot of the current page", json!({})),
    ]);
    index
}

fn names(index: &ToolIndex, query: &str, limit: usize) -> Vec<String> {
    index
        .search(query, limit)
        .iter()
        .map(|t| t.name().to_owned())
        .collect()
}

#[test]
fn words_find_the_tool() {
    let index = index();
    assert_eq!(
        names(&index, "read the contents of a file", 1),
        ["read_file"]
    );
    assert_eq!(
        names(&index, "what time is it in Tokyo", 1),
        ["get_current_time"]
    );
    assert_eq!(
        names(&index, "screenshot of the page", 1),
        ["browserTakeScreenshot"]
    );
    assert_eq!(names(&index, "commit history", 1), ["git_log"]);
    assert!(names(&index, "zebra giraffe", 5).is_empty());
    assert!(names(&index, "", 5).is_empty());
    assert!(names(&index, "read", 0).is_empty());
}

#[test]
fn related_words_find_what_the_definition_says_otherwise() {
    let index = index();
    // "remove" is not in any definition: "delete" is.
    assert_eq!(names(&index, "remove a file", 1), ["delete_file"]);
    // "folder" finds directories.
    assert_eq!(
        names(&index, "show what is in a folder", 1),
        ["list_directory"]
    );
}

#[test]
fn a_name_in_any_spelling_comes_first_then_names_it_starts() {
    let index = index();
    for query in [
        "git_status",
        "gitStatus",
        "git-status",
        "git status",
        "GIT_STATUS",
    ] {
        assert_eq!(names(&index, query, 1), ["git_status"], "{query}");
    }
    let found = names(&index, "git", 5);
    assert_eq!(&found[..2], ["git_log", "git_status"], "{found:?}");
    assert_eq!(
        names(&index, "browser_take_screenshot", 1),
        ["browserTakeScreenshot"]
    );
}

#[test]
fn select_gives_exactly_the_tools_named() {
    let index = index();
    assert_eq!(
        names(&index, "select:git_log, read_file,nope", 5),
        ["git_log", "read_file"]
    );
    assert_eq!(names(&index, "select:git_log,read_file", 1), ["git_log"]);
}

#[test]
fn sync_indexes_only_what_changed_and_forgets_what_went() {
    let mut index = index();
    let tokens = index.definition_tokens();
    assert_eq!(index.len(), 8);
    let mut tools = index.tools();
    // The same set: nothing indexed again.
    assert_eq!(index.sync(tools.clone()), (0, 0));
    // One changed, one gone, one new.
    tools.retain(|t| t.name() != "delete_file");
    tools.retain(|t| t.name() != "write_file");
    tools.push(tool("write_file", "Stores bytes", json!({})));
    tools.push(tool("erase_disk", "Erases a disk", json!({})));
    assert_eq!(index.sync(tools), (2, 1));
    assert_eq!(index.len(), 8);
    assert!(names(&index, "remove a file", 5)
        .iter()
        .all(|n| n != "delete_file"));
    assert_eq!(names(&index, "bytes", 1), ["write_file"]);
    assert!(names(&index, "overwrite", 5).is_empty());
    assert_ne!(index.definition_tokens(), tokens);
    // Empty again: every posting is gone with its tool.
    assert_eq!(index.sync(Vec::new()), (0, 8));
    assert!(index.is_empty());
    assert_eq!(index.definition_tokens(), 0);
    assert!(index.postings.iter().all(Vec::is_empty));
    assert!(index.term_ids.is_empty() && index.sorted_terms.is_empty());
    assert_eq!(index.free_terms.len(), index.postings.len());
    assert!(names(&index, "file", 5).is_empty());
    // Slots are reused.
    let slots = index.entries.len();
    index.insert(tool("one", "A tool", json!({})));
    assert_eq!(index.entries.len(), slots);
}

#[test]
fn the_catalogue_fits_its_budget_and_says_what_did_not() {
    let index = index();
    let all = index.catalogue(10_000);
    assert_eq!(all.lines().count(), 8, "{all}");
    assert!(
        all.contains("- read_file: Read the complete contents of a file from the file system.\n")
    );
    let short = index.catalogue(60);
    assert!(short.len() <= 60 * 4, "{short}");
    assert!(short.ends_with("more: search to find them\n"), "{short}");
    let long = "word ".repeat(100);
    let mut index = ToolIndex::new();
    index.insert(tool(
        "long",
        &format!("{long}. Second sentence."),
        json!({}),
    ));
    let line = index.catalogue(1_000);
    assert_eq!(line.chars().count(), "- long: \n".len() + 100, "{line}");
}
