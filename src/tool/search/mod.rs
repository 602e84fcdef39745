//! [`ToolIndex`]: tools found by what a model asks for, ranked with BM25.
//!
//! Each tool is indexed on the words ([`terms`](super::terms)) of its name on its server (the
//! heaviest), its title, its description, its parameters' names and descriptions, and its
//! server's name, each field weighted (a word of the name counts three times one of the
//! description). A query's words are matched on those and, at a lower weight, on the words
//! commonly used for the same thing (`remove` finds `delete`). A query that is a tool's name
//! (in any spelling: `git_status`, `gitStatus`, `git status`) puts that tool first, and names
//! that start with it next; `select:NAME[,NAME…]` gives exactly the tools named.
//!
//! The index follows a tool set by [`ToolIndex::sync`]: only tools that are new or whose
//! definition changed are indexed again, and those gone are taken out, so a server's
//! `list_changed`, a reload or a disconnect costs what changed, not the whole catalogue.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;
use std::ops::Bound;
use std::sync::Arc;

use serde_json::Value;

use super::terms::{each_word, one_line, related, squashed, words, Fnv};
use super::AgentTool;

/// BM25's term-frequency saturation (the usual value).
const K1: f32 = 1.2;

/// The parts of a definition, each scored with its own weight and length normalisation
/// (BM25F): a word of the name counts three times one of the description, and a long
/// description or schema does not drown the name.
const FIELDS: usize = 6;
const NAME: usize = 0;
const SERVER: usize = 1;
const TITLE: usize = 2;
const DESCRIPTION: usize = 3;
const PARAMETER: usize = 4;
const PARAMETER_DESCRIPTION: usize = 5;
const WEIGHT: [f32; FIELDS] = [3.0, 1.0, 2.0, 1.0, 1.0, 0.5];
/// Length normalisation per field: none to speak of for the short ones.
const B: [f32; FIELDS] = [0.3, 0.0, 0.3, 0.75, 0.75, 0.75];
/// What a related word of the query counts for, beside one of its own words.
const RELATED_WEIGHT: f32 = 0.35;
/// What a word sharing a long beginning with a query word counts for (`expiry` and
/// `expiration`), and how long that beginning must be: [`PREFIX_LENGTH`] characters and
/// [`PREFIX_SHARE`] of the shorter word.
const PREFIX_WEIGHT: f32 = 0.5;
const PREFIX_LENGTH: usize = 5;
const PREFIX_SHARE: f32 = 0.75;
/// How much answering only part of a query's words costs: a score is multiplied by the share
/// of the words answered to this power.
const COVERAGE: f32 = 1.0;
/// How deep parameter schemas are read (nested objects, array items).
const SCHEMA_DEPTH: usize = 4;
/// The shortest query that finds names starting with it.
const PREFIX_FROM: usize = 3;

/// A search index over tool definitions (see the module docs). Not synchronised: a session
/// keeps it behind its own lock.
#[derive(Default)]
pub struct ToolIndex {
    entries: Vec<Option<Entry>>,
    free: Vec<u32>,
    by_name: HashMap<String, u32>,
    /// Each entry's names, squashed (see [`squashed`]): its exposed name, its name on its
    /// server and `server` + `tool`; sorted, for names that start with a query.
    names: BTreeMap<String, Vec<u32>>,
    term_ids: HashMap<Box<str>, u32, BuildHasherDefault<Fnv>>,
    /// The terms again, sorted, for the words that begin like a query's.
    sorted_terms: BTreeMap<Box<str>, u32>,
    /// Each term's word, by id (to forget a term no tool has any more), and the ids free.
    words_of: Vec<Box<str>>,
    free_terms: Vec<u32>,
    /// For each term, the entries it occurs in (unordered), with its count in each field.
    postings: Vec<Vec<(u32, [u8; FIELDS])>>,
    /// The summed lengths of each field, in words.
    total_lengths: [f64; FIELDS],
}

struct Entry {
    tool: Arc<dyn AgentTool>,
    /// Its keys in `names`.
    names: [String; 3],
    /// Its terms (to take it out of their postings).
    terms: Box<[u32]>,
    /// Each field's length, in words.
    lengths: [u16; FIELDS],
    /// What offering the tool costs ([`AgentTool::definition_tokens`]), worked out when first
    /// asked (it writes the whole definition out).
    tokens: std::sync::OnceLock<usize>,
}

impl ToolIndex {
    /// An empty index.
    pub fn new() -> ToolIndex {
        ToolIndex::default()
    }

    /// How many tools it holds.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// What offering every tool it holds would cost in a model's context, in tokens (the sum
    /// of their [`AgentTool::definition_tokens`]).
    pub fn definition_tokens(&self) -> usize {
        self.live()
            .map(|(_, e)| *e.tokens.get_or_init(|| e.tool.definition_tokens()))
            .sum()
    }

    /// A compact catalogue for a model: a line per tool, `name: what it does` (the first
    /// sentence of its description, shortened), by server, within about `max_tokens` tokens
    /// (estimated as [`definition_tokens`](AgentTool::definition_tokens) are); a last line says
    /// how many did not fit.
    pub fn catalogue(&self, max_tokens: usize) -> String {
        let budget = max_tokens.saturating_mul(super::tokens::BYTES_PER_TOKEN);
        let mut tools: Vec<&Entry> = self.live().map(|(_, e)| e).collect();
        tools.sort_by(|a, b| {
            let key = |e: &Entry| {
                (
                    e.tool.mcp_identity().map(|(s, _)| s.to_owned()),
                    e.tool.name().to_owned(),
                )
            };
            key(a).cmp(&key(b))
        });
        let mut out = String::new();
        let mut listed = 0;
        for entry in &tools {
            let line = format!(
                "- {}: {}\n",
                entry.tool.name(),
                one_line(entry.tool.description())
            );
            // Room is kept for the last line.
            if out.len() + line.len() + 64 > budget {
                break;
            }
            out.push_str(&line);
            listed += 1;
        }
        if listed < tools.len() {
            out.push_str(&format!(
                "- … and {} more: search to find them\n",
                tools.len() - listed
            ));
        }
        out
    }

    /// The tool indexed under `name` (its exposed name).
    pub fn get(&self, name: &str) -> Option<&Arc<dyn AgentTool>> {
        let slot = *self.by_name.get(name)?;
        self.entries[slot as usize].as_ref().map(|e| &e.tool)
    }

    /// Every tool, by name.
    pub fn tools(&self) -> Vec<Arc<dyn AgentTool>> {
        let mut names: Vec<&String> = self.by_name.keys().collect();
        names.sort();
        names
            .into_iter()
            .filter_map(|n| self.get(n).cloned())
            .collect()
    }

    /// Makes the index hold exactly `tools`: a tool already there with the same definition is
    /// kept (its object replaced, not indexed again), a new or changed one is indexed, and one
    /// no longer in `tools` is taken out. Returns how many were indexed and how many taken out.
    pub fn sync(&mut self, tools: impl IntoIterator<Item = Arc<dyn AgentTool>>) -> (usize, usize) {
        // The slots the new set has, by slot.
        let mut keep: Vec<bool> = vec![false; self.entries.len()];
        let mut indexed = 0;
        for tool in tools {
            let slot = self.by_name.get(tool.name()).copied();
            let same = slot
                .and_then(|slot| self.entries[slot as usize].as_mut())
                .filter(|e| same_definition(e.tool.as_ref(), tool.as_ref()));
            let slot = match same {
                Some(entry) => {
                    entry.tool = tool;
                    slot
                }
                None => {
                    indexed += 1;
                    Some(self.add(tool))
                }
            };
            if let Some(slot) = slot {
                let slot = slot as usize;
                if keep.len() <= slot {
                    keep.resize(slot + 1, false);
                }
                keep[slot] = true;
            }
        }
        let gone: Vec<String> = self
            .live()
            .filter(|(slot, _)| !keep.get(*slot as usize).copied().unwrap_or(false))
            .map(|(_, e)| e.tool.name().to_owned())
            .collect();
        for name in &gone {
            self.remove(name);
        }
        (indexed, gone.len())
    }

    /// Indexes a tool under its name, replacing any tool of that name.
    pub fn insert(&mut self, tool: Arc<dyn AgentTool>) {
        self.add(tool);
    }

    /// [`ToolIndex::insert`], giving the tool's slot.
    fn add(&mut self, tool: Arc<dyn AgentTool>) -> u32 {
        let name = tool.name().to_owned();
        self.remove(&name);
        // Each word's term and field, then counted.
        let mut seen: Vec<(u32, u8)> = Vec::new();
        let mut lengths = [0u16; FIELDS];
        let mut add = |text: &str, field: usize| {
            each_word(text, |word| {
                seen.push((self.term_id(word), field as u8));
                lengths[field] = lengths[field].saturating_add(1);
            });
        };
        let (server, own_name) = tool.mcp_identity().unwrap_or(("", tool.name()));
        add(own_name, NAME);
        add(server, SERVER);
        // The display name, from the definition or (as servers of 2025-03-26 send it) its
        // annotations; one of them when both say the same.
        if let Some(definition) = tool.mcp_definition() {
            let title = definition.title.as_deref();
            let annotated = definition
                .annotations
                .as_ref()
                .and_then(|a| a.title.as_deref());
            for t in [title, annotated.filter(|a| Some(*a) != title)]
                .into_iter()
                .flatten()
            {
                add(t, TITLE);
            }
        }
        add(tool.description(), DESCRIPTION);
        schema_words(tool.parameters(), SCHEMA_DEPTH, &mut add);
        seen.sort_unstable();
        let mut terms: Vec<(u32, [u8; FIELDS])> = Vec::new();
        for (term, field) in seen {
            if terms.last().is_none_or(|(t, _)| *t != term) {
                terms.push((term, [0; FIELDS]));
            }
            if let Some((_, counts)) = terms.last_mut() {
                let count = &mut counts[usize::from(field)];
                *count = count.saturating_add(1);
            }
        }
        let entry = Entry {
            tokens: std::sync::OnceLock::new(),
            names: [
                squashed(&name),
                squashed(own_name),
                squashed(&format!("{server}{own_name}")),
            ],
            tool,
            terms: terms.iter().map(|(t, _)| *t).collect(),
            lengths,
        };
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.entries.push(None);
                (self.entries.len() - 1) as u32
            }
        };
        for (term, counts) in terms {
            self.postings[term as usize].push((slot, counts));
        }
        for name in &entry.names {
            let slots = self.names.entry(name.clone()).or_default();
            if !slots.contains(&slot) {
                slots.push(slot);
            }
        }
        for (total, length) in self.total_lengths.iter_mut().zip(lengths) {
            *total += f64::from(length);
        }
        self.entries[slot as usize] = Some(entry);
        self.by_name.insert(name, slot);
        slot
    }

    /// Takes the tool named `name` out. False when there was none.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(slot) = self.by_name.remove(name) else {
            return false;
        };
        if let Some(entry) = self.entries[slot as usize].take() {
            for term in entry.terms.iter() {
                let list = &mut self.postings[*term as usize];
                if let Some(at) = list.iter().position(|(s, _)| *s == slot) {
                    list.swap_remove(at);
                }
                if list.is_empty() {
                    self.forget_term(*term);
                }
            }
            for (total, length) in self.total_lengths.iter_mut().zip(entry.lengths) {
                *total -= f64::from(length);
            }
            for name in &entry.names {
                if let Some(slots) = self.names.get_mut(name) {
                    slots.retain(|s| *s != slot);
                    if slots.is_empty() {
                        self.names.remove(name);
                    }
                }
            }
        }
        self.free.push(slot);
        true
    }

    /// The tools that best answer `query`, best first, at most `limit` (see the module docs).
    pub fn search(&self, query: &str, limit: usize) -> Vec<Arc<dyn AgentTool>> {
        self.ranked(query, limit)
            .into_iter()
            .filter_map(|slot| self.entries[slot as usize].as_ref())
            .map(|e| Arc::clone(&e.tool))
            .collect()
    }

    fn ranked(&self, query: &str, limit: usize) -> Vec<u32> {
        if limit == 0 {
            return Vec::new();
        }
        if let Some(names) = query.trim().strip_prefix("select:") {
            return names
                .split(',')
                .filter_map(|n| self.by_name.get(n.trim()).copied())
                .take(limit)
                .collect();
        }
        // (tier, score, the query's words answered) per entry, by slot: tier 0 a name the
        // query is, 1 a name it starts, 2 words, 3 nothing.
        let mut found: Vec<(u8, f32, u64)> = vec![(3, 0.0, 0); self.entries.len()];
        let whole = squashed(query);
        if !whole.is_empty() {
            let starting = self
                .names
                .range::<str, _>((Bound::Included(whole.as_str()), Bound::Unbounded))
                .take_while(|(name, _)| name.starts_with(&whole));
            for (name, slots) in starting {
                let tier = if *name == whole {
                    0
                } else if whole.len() >= PREFIX_FROM {
                    1
                } else {
                    continue;
                };
                for &slot in slots {
                    let at = &mut found[slot as usize];
                    at.0 = at.0.min(tier);
                }
            }
        }
        let live = self.len().max(1) as f32;
        let averages: [f32; FIELDS] =
            std::array::from_fn(|f| ((self.total_lengths[f] / f64::from(live)) as f32).max(1.0));
        let (terms, asked) = self.query_terms(query);
        for (term, weight, of) in terms {
            let list = &self.postings[term as usize];
            let df = list.len() as f32;
            let idf = (1.0 + (live - df + 0.5) / (df + 0.5)).ln();
            for &(slot, counts) in list {
                let Some(entry) = self.entries[slot as usize].as_ref() else {
                    continue;
                };
                let tf: f32 = (0..FIELDS)
                    .map(|f| {
                        let norm = 1.0 - B[f] + B[f] * f32::from(entry.lengths[f]) / averages[f];
                        WEIGHT[f] * f32::from(counts[f]) / norm
                    })
                    .sum();
                let score = weight * idf * tf * (K1 + 1.0) / (tf + K1);
                let at = &mut found[slot as usize];
                at.0 = at.0.min(2);
                at.1 += score;
                at.2 |= of;
            }
        }
        // A tool that answers more of the query's words goes before one that answers fewer
        // of them many times over (the classic coordination factor).
        let mut ranked: Vec<(u32, u8, f32)> = found
            .into_iter()
            .enumerate()
            .filter(|(_, (tier, score, _))| *tier < 2 || (*tier == 2 && *score > 0.0))
            .map(|(slot, (tier, score, of))| {
                let slot = slot as u32;
                let coverage = of.count_ones() as f32 / asked.max(1) as f32;
                (slot, tier, score * coverage.powf(COVERAGE))
            })
            .collect();
        let order = |a: &(u32, u8, f32), b: &(u32, u8, f32)| {
            a.1.cmp(&b.1)
                .then(b.2.total_cmp(&a.2))
                .then_with(|| self.name_of(a.0).cmp(self.name_of(b.0)))
        };
        // The best `limit` first (not the whole ranking sorted), then those in order.
        if ranked.len() > limit {
            ranked.select_nth_unstable_by(limit - 1, order);
            ranked.truncate(limit);
        }
        ranked.sort_by(order);
        ranked.into_iter().map(|(slot, _, _)| slot).collect()
    }

    /// The query's known terms with their weights: its own words at 1, words that begin the
    /// same way at [`PREFIX_WEIGHT`], related words at [`RELATED_WEIGHT`] (a word that is
    /// several of these counts once, at the highest).
    ///
    /// With each term, the query's words it stands for (a bit each); and how many words the
    /// query has.
    fn query_terms(&self, query: &str) -> (Vec<(u32, f32, u64)>, u32) {
        let mut weights: HashMap<u32, (f32, u64)> = HashMap::new();
        let mut asked = 0;
        let mut seen = std::collections::HashSet::new();
        for word in words(query) {
            if !seen.insert(word.clone()) || asked == 64 {
                continue;
            }
            let bit = 1u64 << asked;
            asked += 1;
            let mut weigh = |id: u32, weight: f32| {
                let slot = weights.entry(id).or_default();
                slot.0 = slot.0.max(weight);
                slot.1 |= bit;
            };
            if let Some(&id) = self.term_ids.get(word.as_str()) {
                weigh(id, 1.0);
            }
            for (_, id) in self.alike(&word) {
                weigh(id, PREFIX_WEIGHT);
            }
            for r in related(&word) {
                if let Some(&id) = self.term_ids.get(r) {
                    weigh(id, RELATED_WEIGHT);
                }
            }
        }
        // In term order, so scores are summed in the same order every time (equal scores
        // stay equal; the names break ties).
        let mut terms: Vec<(u32, f32, u64)> = weights
            .into_iter()
            .map(|(id, (weight, of))| (id, weight, of))
            .collect();
        terms.sort_by_key(|(id, _, _)| *id);
        (terms, asked)
    }

    /// The terms other than `word` that share a long beginning with it (see
    /// [`PREFIX_LENGTH`]).
    fn alike<'a>(&'a self, word: &'a str) -> impl Iterator<Item = (&'a str, u32)> + 'a {
        let start =
            (word.is_ascii() && word.len() >= PREFIX_LENGTH).then(|| &word[..PREFIX_LENGTH]);
        start.into_iter().flat_map(move |start| {
            self.sorted_terms
                .range::<str, _>((Bound::Included(start), Bound::Unbounded))
                .take_while(move |(t, _)| t.starts_with(start))
                .filter(move |(t, _)| {
                    let shared = t
                        .bytes()
                        .zip(word.bytes())
                        .take_while(|(a, b)| a == b)
                        .count();
                    let shorter = t.len().min(word.len());
                    t.as_ref() != word && shared as f32 >= PREFIX_SHARE * shorter as f32
                })
                .map(|(t, id)| (&**t, *id))
        })
    }

    fn live(&self) -> impl Iterator<Item = (u32, &Entry)> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(slot, e)| e.as_ref().map(|e| (slot as u32, e)))
    }

    fn name_of(&self, slot: u32) -> &str {
        self.entries[slot as usize]
            .as_ref()
            .map_or("", |e| e.tool.name())
    }

    fn term_id(&mut self, word: &str) -> u32 {
        if let Some(&id) = self.term_ids.get(word) {
            return id;
        }
        let id = match self.free_terms.pop() {
            Some(id) => {
                self.words_of[id as usize] = word.into();
                id
            }
            None => {
                self.postings.push(Vec::new());
                self.words_of.push(word.into());
                (self.postings.len() - 1) as u32
            }
        };
        self.term_ids.insert(word.into(), id);
        self.sorted_terms.insert(word.into(), id);
        id
    }

    /// Forgets a term no tool has any more.
    fn forget_term(&mut self, id: u32) {
        let word = std::mem::take(&mut self.words_of[id as usize]);
        self.term_ids.remove(&word);
        self.sorted_terms.remove(&word);
        self.free_terms.push(id);
    }
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.len())
            .field("terms", &self.term_ids.len())
            .finish()
    }
}

/// Whether two tool objects show the same definition: the same MCP definition object (a
/// server's unchanged tool), or the same name, description and parameters.
fn same_definition(a: &dyn AgentTool, b: &dyn AgentTool) -> bool {
    if let (Some(x), Some(y)) = (a.mcp_definition(), b.mcp_definition()) {
        if std::ptr::eq(x, y) {
            return a.mcp_identity() == b.mcp_identity();
        }
    }
    a.name() == b.name()
        && a.description() == b.description()
        && a.parameters() == b.parameters()
        && a.mcp_identity() == b.mcp_identity()
        && titles(a) == titles(b)
}

/// A tool's display names: its definition's title and its annotations' title.
fn titles(tool: &dyn AgentTool) -> (Option<&str>, Option<&str>) {
    let definition = tool.mcp_definition();
    (
        definition.and_then(|d| d.title.as_deref()),
        definition
            .and_then(|d| d.annotations.as_ref())
            .and_then(|a| a.title.as_deref()),
    )
}

/// The words of a parameters schema: each property's name and description (and title), into
/// nested objects and array items down to `depth`.
fn schema_words(schema: &Value, depth: usize, add: &mut impl FnMut(&str, usize)) {
    if depth == 0 {
        return;
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            add(name, PARAMETER);
            for key in ["description", "title"] {
                if let Some(text) = property.get(key).and_then(Value::as_str) {
                    add(text, PARAMETER_DESCRIPTION);
                }
            }
            schema_words(property, depth - 1, add);
        }
    }
    if let Some(items) = schema.get("items") {
        schema_words(items, depth - 1, add);
    }
}

#[cfg(test)]
mod tests;
