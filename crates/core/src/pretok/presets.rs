//! The pre-tokenizer presets: the one table of their names, published
//! patterns, fast forms and descriptions (`PRESETS`). `PreTokenizerSpec`,
//! the regex path, the scanners' tests and the Python package
//! (`_native.PRESETS`) all read it.

use super::{Lookahead, PreTokenizerSpec};
use crate::scan::Preset;

/// How a preset's regex cuts a text (for the regex path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cut {
    /// The matches tile the text; `\s+(?!\S)` is emulated as `Lookahead` says.
    Covering(Lookahead),
    /// The matches and the text between them are pieces.
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
    /// to a later part). Tests check it gives the published pattern's pieces.
    pub fast: &'static str,
    pub(super) cut: Cut,
    pub(super) scanner: Preset,
}

/// One pre-tokenizer preset: the one place its name, its other accepted
/// names, its regexes and its one-line description are written. The Python
/// package reads this table (`_native.PRESETS`) for its option checks, help
/// texts and exports.
#[derive(Debug)]
pub struct PresetDef {
    /// The exact name users give (and model files store).
    pub name: &'static str,
    /// Other names the engine accepts for it (tiktoken's encoding names).
    pub aliases: &'static [&'static str],
    /// What it is, in one line (help texts).
    pub about: &'static str,
    /// The regexes, for the regex-based presets.
    pub regex: Option<PresetRegex>,
    pub(super) spec: PreTokenizerSpec,
}

/// Every preset, in the order help texts list them.
pub const PRESETS: [PresetDef; 6] = [
    PresetDef {
        name: "gpt2",
        aliases: &[],
        about: "GPT-2's regex (r50k_base, p50k_base): cuts every combining mark into a piece of its own",
        regex: Some(PresetRegex {
            pattern: r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
            fast: r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+",
            cut: Cut::Covering(Lookahead::AnyWhitespace),
            scanner: Preset::Gpt2,
        }),
        spec: PreTokenizerSpec::Gpt2,
    },
    PresetDef {
        name: "cl100k",
        aliases: &["cl100k_base"],
        about: "tiktoken's cl100k_base regex",
        regex: Some(PresetRegex {
            pattern: r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+",
            fast: r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+",
            cut: Cut::Covering(Lookahead::NotAfterNewline),
            scanner: Preset::Cl100k,
        }),
        spec: PreTokenizerSpec::Cl100k,
    },
    PresetDef {
        name: "o200k",
        aliases: &["o200k_base"],
        about: "tiktoken's o200k_base regex: keeps combining marks with their letters",
        regex: Some(PresetRegex {
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
            cut: Cut::Covering(Lookahead::NotAfterNewline),
            scanner: Preset::O200k,
        }),
        spec: PreTokenizerSpec::O200k,
    },
    PresetDef {
        name: "whitespace",
        aliases: &[],
        about: "str.split(): the runs between whitespace (SentencePiece-like, with the chars scheme)",
        regex: None,
        spec: PreTokenizerSpec::Whitespace,
    },
    PresetDef {
        name: "none",
        aliases: &[],
        about: "the whole text is one piece",
        regex: None,
        spec: PreTokenizerSpec::None,
    },
    // SuperBPE's stage-2 pattern (Liu et al., 2025): digit groups, runs of
    // two or more punctuation marks, and runs of spaces not followed by a
    // word stay apart; the text between them (words with single spaces) is
    // one unit.
    PresetDef {
        name: "superword",
        aliases: &[],
        about: "SuperBPE's second stage: pieces span several words joined by single spaces \
                (superbpe_transition switches to it)",
        regex: Some(PresetRegex {
            pattern: r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)",
            fast: r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +",
            cut: Cut::Isolated,
            scanner: Preset::Superword,
        }),
        spec: PreTokenizerSpec::Superword,
    },
];

/// The preset named `name` (its exact name or an alias).
pub fn preset(name: &str) -> Option<&'static PresetDef> {
    PRESETS.iter().find(|p| p.name == name || p.aliases.contains(&name))
}

/// A preset's published regex, by its name (`None` for other names and for
/// the presets without one).
pub fn preset_pattern(name: &str) -> Option<&'static str> {
    preset(name).and_then(|p| p.regex.as_ref()).map(|r| r.pattern)
}
