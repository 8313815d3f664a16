//! The pre-tokenizer presets: one table (`PRESETS`), one row per preset
//! with everything about it: its name, the other names it is known by, its
//! published regex and the fast form the regex path runs, how its matches
//! cut a text, its hand-written scanner if it has one, and its one-line
//! description. `PreTokenizerSpec::Preset` refers to a row; the regex path,
//! the scanners' tests and the Python package (`_native.PRESETS`) all read
//! the table.
//!
//! A new regex preset is one more row here (a `const` and its place in
//! `PRESETS`): without a scanner it runs on the regex path, which the tests
//! hold to its published pattern; a scanner (`crate::scan`) can come later,
//! held to the regex path by the same tests.

use super::{Lookahead, PreTokenizerSpec};
use crate::scan::Preset;

/// How a preset cuts a text.
#[derive(Debug)]
pub(super) enum Cut {
    /// By a regex.
    Regex(PresetRegex),
    /// Python's `str.split()`: the runs between whitespace.
    Whitespace,
    /// The whole text is one piece.
    Whole,
}

/// How a preset's regex matches make pieces (for the regex path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Split {
    /// The matches tile the text; `\s+(?!\S)` is emulated as `Lookahead` says.
    Covering(Lookahead),
    /// The matches and the text between them are pieces; a match of spaces
    /// only that a non-space follows gives back its last space, and a single
    /// such space is no match (` +(?!\S)`, emulated).
    Isolated,
}

/// A preset's regexes: the published one, and the form the regex path runs.
#[derive(Debug)]
pub struct PresetRegex {
    /// The published regex, look-ahead included (exports, the reference oracle).
    pub pattern: &'static str,
    /// The same without the look-ahead alternative (emulated in code, see the
    /// module notes) and without possessive quantifiers (in these patterns
    /// they never change the match: the possessed class cannot be given back
    /// to a later part); the published pattern itself where it has neither.
    /// Tests check it gives the published pattern's pieces.
    pub fast: &'static str,
    pub(crate) split: Split,
    /// The hand-written scanner that cuts as this regex does (`None`: the
    /// preset runs on the regex path).
    pub(crate) scanner: Option<Preset>,
}

/// One pre-tokenizer preset: the one place its name, its other accepted
/// names, how it cuts and its one-line description are written. The Python
/// package reads this table (`_native.PRESETS`) for its option checks, help
/// texts and exports.
pub struct PresetDef {
    /// The exact name users give (and model files store).
    pub name: &'static str,
    /// Other names for it, taken wherever a preset is named: tiktoken's
    /// names of the encodings whose pattern it is.
    pub aliases: &'static [&'static str],
    /// What it is, in one line (help texts).
    pub about: &'static str,
    pub(super) cut: Cut,
}

impl PresetDef {
    /// The regexes, for the regex-based presets.
    pub fn regex(&self) -> Option<&PresetRegex> {
        match &self.cut {
            Cut::Regex(r) => Some(r),
            Cut::Whitespace | Cut::Whole => None,
        }
    }
    /// This name or one of its aliases.
    pub fn is_named(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
}

/// A row is known by its name: rows are `const`s, so two references to the
/// same row need not share an address.
impl PartialEq for PresetDef {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for PresetDef {}

impl std::hash::Hash for PresetDef {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl std::fmt::Debug for PresetDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)
    }
}

pub const GPT2: PresetDef = PresetDef {
    name: "gpt2",
    aliases: &["r50k_base", "p50k_base"],
    about: "GPT-2's regex: cuts every combining mark into a piece of its own",
    cut: Cut::Regex(PresetRegex {
        pattern: r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
        fast: r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+",
        split: Split::Covering(Lookahead::AnyWhitespace),
        scanner: Some(Preset::Gpt2),
    }),
};

pub const CL100K: PresetDef = PresetDef {
    name: "cl100k",
    aliases: &["cl100k_base"],
    about: "tiktoken's cl100k_base regex",
    cut: Cut::Regex(PresetRegex {
        pattern: r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+",
        fast: r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+",
        split: Split::Covering(Lookahead::NotAfterNewline),
        scanner: Some(Preset::Cl100k),
    }),
};

pub const O200K: PresetDef = PresetDef {
    name: "o200k",
    aliases: &["o200k_base"],
    about: "tiktoken's o200k_base regex: keeps combining marks with their letters",
    cut: Cut::Regex(PresetRegex {
        pattern: concat!(
            r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
        ),
        fast: concat!(
            r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+"
        ),
        split: Split::Covering(Lookahead::NotAfterNewline),
        scanner: Some(Preset::O200k),
    }),
};

pub const WHITESPACE: PresetDef = PresetDef {
    name: "whitespace",
    aliases: &[],
    about: "str.split(): the runs between whitespace (SentencePiece-like, with the chars scheme)",
    cut: Cut::Whitespace,
};

pub const NONE: PresetDef = PresetDef { name: "none", aliases: &[], about: "the whole text is one piece", cut: Cut::Whole };

/// SuperBPE's stage-2 pattern (Liu et al., 2025): digit groups, runs of two
/// or more punctuation marks, and runs of spaces not followed by a word stay
/// apart; the text between them (words with single spaces) is one unit.
pub const SUPERWORD: PresetDef = PresetDef {
    name: "superword",
    aliases: &[],
    about: "SuperBPE's second stage: pieces span several words joined by single spaces \
            (superbpe_transition switches to it)",
    cut: Cut::Regex(PresetRegex {
        pattern: r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)",
        fast: r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +",
        split: Split::Isolated,
        scanner: Some(Preset::Superword),
    }),
};

/// Every preset, in the order help texts list them.
pub const PRESETS: &[&PresetDef] = &[&GPT2, &CL100K, &O200K, &WHITESPACE, &NONE, &SUPERWORD];

/// The presets the engine's own logic names (the others are only rows).
impl PreTokenizerSpec {
    pub const GPT2: Self = Self::Preset(&GPT2);
    pub const CL100K: Self = Self::Preset(&CL100K);
    pub const O200K: Self = Self::Preset(&O200K);
    pub const WHITESPACE: Self = Self::Preset(&WHITESPACE);
    pub const NONE: Self = Self::Preset(&NONE);
    pub const SUPERWORD: Self = Self::Preset(&SUPERWORD);
}

/// The preset named `name` (its exact name or an alias).
pub fn preset(name: &str) -> Option<&'static PresetDef> {
    PRESETS.iter().copied().find(|p| p.is_named(name))
}

/// A preset's published regex, by its name (`None` for other names and for
/// the presets without one).
pub fn preset_pattern(name: &str) -> Option<&'static str> {
    preset(name).and_then(PresetDef::regex).map(|r| r.pattern)
}
