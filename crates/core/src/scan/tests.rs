//! Differential tests: every scanner against the regex path (`regex_reference`)
//! and against the published pattern on a backtracking engine (fancy-regex,
//! which runs the look-ahead itself), on seeded random text drawn over every
//! Unicode general category plus the characters the patterns single out.

use crate::pretok::{utf8_runs, PreTokenizer, PreTokenizerSpec, PresetRegex, Split, PRESETS};
use regex_syntax::hir::{Class, HirKind};

/// splitmix64: small, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Every general category (two-letter), as the `regex` crate knows them.
const CATEGORIES: &[&str] = &[
    "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm",
    "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Co", "Cn",
];

/// Fragments the patterns treat specially.
const FRAGMENTS: &[&str] = &[
    " ", " ", " ", "  ", "   ", "\t", "\n", "\r", "\r\n", "\r\n\r\n", "\n\n", " \n", "\u{a0}", "\u{3000}",
    "\u{85}", "\u{b}", "\u{c}", "\u{2028}", "\u{2029}", "\u{1680}", "\u{2009}", "\u{202f}", "\u{200b}", "\u{1c}",
    "'", "'s", "'S", "'t", "'T", "'re", "'RE", "'rE", "'Re", "'ve", "'VE", "'vE", "'m", "'M", "'ll", "'LL", "'lL",
    "'Ll", "'d", "'D", "'\u{17f}", "'\u{212a}", "''", "'x", "/", "//", "\n/", "!", "?!", ".", ",", "-", "_", "\"",
    "0", "7", "42", "1234567", "\u{661}\u{662}\u{663}", "\u{967}\u{968}", "\u{ff11}\u{ff12}", "\u{2167}", "\u{bd}",
    "\u{1d7ce}", "\u{301}", "\u{308}", "\u{903}", "\u{20dd}", "e\u{301}", "A\u{301}", "\u{1f600}", "\u{1f44d}\u{1f3fd}",
    "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}", "\u{2764}\u{fe0f}", "\u{1f1fa}\u{1f1f8}", "\u{e000}", "\u{f0000}",
    "\u{10ffff}", "\u{378}", "\u{fffe}", "a", "b", "z", "A", "Z", "hello", "World", "HTTP", "iPhone", "McDonald",
    "\u{1c5}", "\u{2b0}", "\u{aa}", "\u{e9}", "\u{c9}", "\u{3b1}", "\u{391}", "\u{434}", "\u{414}", "\u{5d0}",
    "\u{627}", "\u{915}", "\u{e01}", "\u{65e5}", "\u{672c}", "\u{3042}", "\u{30a2}", "\u{ac00}", "\u{10400}",
    "\u{10428}", "\u{1e900}", "\u{1e922}",
];

struct Gen {
    rng: Rng,
    /// Ranges of each category.
    pools: Vec<Vec<(u32, u32)>>,
}

impl Gen {
    fn new(seed: u64) -> Self {
        let pools = CATEGORIES
            .iter()
            .map(|cat| {
                let hir = regex_syntax::parse(&format!(r"\p{{{cat}}}")).unwrap();
                match hir.kind() {
                    HirKind::Class(Class::Unicode(c)) => {
                        c.ranges().iter().map(|r| (r.start() as u32, r.end() as u32)).collect()
                    }
                    // A category of one character (Zl, Zp) parses as a literal.
                    HirKind::Literal(lit) => {
                        let c = std::str::from_utf8(&lit.0).unwrap().chars().next().unwrap() as u32;
                        vec![(c, c)]
                    }
                    other => unreachable!("{cat}: {other:?}"),
                }
            })
            .collect();
        Gen { rng: Rng(seed), pools }
    }

    fn category_char(&mut self) -> char {
        let pool = self.rng.below(self.pools.len());
        let pool = &self.pools[pool];
        let (lo, hi) = pool[self.rng.below(pool.len())];
        let cp = lo + (self.rng.next() % (hi - lo + 1) as u64) as u32;
        char::from_u32(cp).unwrap_or('?')
    }

    fn text(&mut self, max_parts: usize) -> String {
        let mut s = String::new();
        for _ in 0..self.rng.below(max_parts + 1) {
            match self.rng.below(10) {
                0..=3 => s.push(self.category_char()),
                4 => s.push(char::from(b' ' + self.rng.below(95) as u8)),
                _ => s.push_str(*self.rng.pick(FRAGMENTS)),
            }
        }
        s
    }
}

fn pieces(p: &PreTokenizer, text: &str) -> Vec<String> {
    p.pieces(text).unwrap().into_iter().map(String::from).collect()
}

fn fancy_matches(re: &fancy_regex::Regex, text: &str) -> Vec<String> {
    re.find_iter(text).map(|m| m.unwrap().as_str().to_string()).filter(|s| !s.is_empty()).collect()
}

/// The isolated split: matches and the gaps between them.
pub(crate) fn fancy_isolated(re: &fancy_regex::Regex, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut gap = 0;
    for m in re.find_iter(text) {
        let m = m.unwrap();
        if m.start() > gap {
            out.push(text[gap..m.start()].to_string());
        }
        if m.end() > m.start() {
            out.push(m.as_str().to_string());
        }
        gap = m.end();
    }
    if gap < text.len() {
        out.push(text[gap..].to_string());
    }
    out
}

/// Test sizes: full in optimised builds (`cargo test --profile quick`),
/// an eighth in debug builds, where the regex path is some 20x slower.
fn scaled(n: usize) -> usize {
    if cfg!(debug_assertions) {
        n.div_ceil(8)
    } else {
        n
    }
}

/// Every row of `PRESETS` with a regex: its spec and its regexes.
fn all() -> Vec<(PreTokenizerSpec, &'static PresetRegex)> {
    PRESETS.iter().filter_map(|&p| p.regex().map(|r| (PreTokenizerSpec::Preset(p), r))).collect()
}

/// What `PreTokenizer::new` runs (the scanner where the row has one, the
/// regex path otherwise), the regex path and the backtracking oracle on
/// `texts`, for every regex row of the table.
fn check_all(texts: impl Iterator<Item = String>, oracle_every: usize) {
    let engines: Vec<_> = all()
        .iter()
        .map(|(spec, r)| {
            (
                spec.clone(),
                r.split,
                PreTokenizer::new(spec.clone()).unwrap(),
                PreTokenizer::regex_reference(spec.clone()).unwrap(),
                fancy_regex::Regex::new(r.pattern).unwrap(),
            )
        })
        .collect();
    for (n, text) in texts.enumerate() {
        for (spec, split, scan, reference, oracle) in &engines {
            let got = pieces(scan, &text);
            assert_eq!(got, pieces(reference, &text), "{spec:?} scanner vs regex path on {text:?}");
            assert_eq!(got.concat(), text, "{spec:?} does not cover {text:?}");
            if n % oracle_every == 0 {
                let expected = match split {
                    Split::Isolated => fancy_isolated(oracle, &text),
                    Split::Covering(_) => fancy_matches(oracle, &text),
                };
                assert_eq!(got, expected, "{spec:?} scanner vs published pattern on {text:?}");
            }
        }
    }
}

/// A row with a scanner runs on it, a row without one on the regex path.
#[test]
fn presets_use_their_scanners() {
    let rows = all();
    assert!(rows.iter().filter(|(_, r)| r.scanner.is_some()).count() >= 4);
    for (spec, r) in rows {
        let p = PreTokenizer::new(spec.clone()).unwrap();
        assert_eq!(format!("{p:?}").contains("Scan"), r.scanner.is_some(), "{spec:?}: {p:?}");
        let r = PreTokenizer::regex_reference(spec.clone()).unwrap();
        assert!(!format!("{r:?}").contains("Scan"), "{spec:?}: {r:?}");
    }
}

#[test]
fn random_text_over_every_category() {
    let mut g = Gen::new(0x5EED_0001);
    let texts: Vec<String> = (0..scaled(6000)).map(|_| g.text(24)).collect();
    check_all(texts.into_iter(), 3);
}

#[test]
fn long_random_text() {
    let mut g = Gen::new(0x5EED_0002);
    let texts: Vec<String> = (0..scaled(60)).map(|_| g.text(3000)).collect();
    check_all(texts.into_iter(), 1);
}

/// Short texts over a small alphabet that hits the o200k case rules, marks
/// as leaders, contractions after either case, and whitespace mixes; all
/// strings up to length 4 (and random longer ones).
#[test]
fn exhaustive_small_alphabet() {
    let alphabet = [
        "a", "A", "\u{1c5}", "\u{2b0}", "\u{aa}", "\u{301}", "'", "s", "S", "L", " ", "\n", "\r", "\t", "1", "!", "/",
        "\u{a0}",
    ];
    let mut texts = vec![String::new()];
    let mut layer = vec![String::new()];
    for _ in 0..4 {
        let mut next = Vec::new();
        for prefix in &layer {
            for c in alphabet {
                next.push(format!("{prefix}{c}"));
            }
        }
        texts.extend(next.iter().cloned());
        layer = next;
    }
    check_all(texts.into_iter(), 7);
    let mut rng = Rng(0x5EED_0003);
    let random: Vec<String> =
        (0..scaled(5000)).map(|_| (0..rng.below(16)).map(|_| *rng.pick(&alphabet)).collect::<String>()).collect();
    check_all(random.into_iter(), 2);
}

/// Every code point after `'` and between letters, so the contractions'
/// case folding and each character's class are checked one by one.
#[test]
fn every_code_point_in_context() {
    let mut texts = Vec::new();
    for cp in 0..0x11_0000u32 {
        let Some(c) = char::from_u32(cp) else { continue };
        // Every code point of the first blocks, a sample of the rest (the
        // class table itself is checked at every code point in `tables`).
        let (stride, dense) = if cfg!(debug_assertions) { (53, 0x800) } else { (7, 0x3000) };
        if cp % stride == 0 || cp < dense {
            texts.push(format!("x'{c}e a{c}B {c}{c}1 !{c}\n"));
        }
    }
    check_all(texts.into_iter(), 97);
}

/// Invalid UTF-8 reaches the pre-tokenizers only as the valid runs of
/// `utf8_runs` (counting and encoding both cut there first); the scanner
/// and the regex path must agree on those runs too.
#[test]
fn invalid_utf8_runs() {
    let engines: Vec<_> = all()
        .into_iter()
        .map(|(spec, _)| {
            let (scan, reference) = (PreTokenizer::new(spec.clone()).unwrap(), PreTokenizer::regex_reference(spec.clone()).unwrap());
            (spec, scan, reference)
        })
        .collect();
    let mut g = Gen::new(0x5EED_0004);
    for _ in 0..scaled(2000) {
        let mut bytes = g.text(12).into_bytes();
        for _ in 0..g.rng.below(4) {
            let at = g.rng.below(bytes.len() + 1);
            const BAD: [&[u8]; 5] = [&[0xff], &[0xc3], &[0xe2, 0x82], &[0x80], &[0xf0, 0x9f, 0x98]];
            let bad = *g.rng.pick(&BAD);
            bytes.splice(at..at, bad.iter().copied());
        }
        for (spec, scan, reference) in &engines {
            utf8_runs::<()>(&bytes, &mut |run| {
                if let Ok(s) = run {
                    assert_eq!(pieces(scan, s), pieces(reference, s), "{spec:?} on {s:?}");
                }
                Ok(())
            })
            .unwrap();
        }
    }
}

/// Runs longer than a block and than the scanners' window of blocks, of
/// every class, in every script width, at every offset to a block edge.
#[test]
fn runs_across_blocks_and_windows() {
    let units = ["a", "Q", "é", "Д", "ष्", "日", "𐐀", "7", "٣", " ", "\t", "\n", "\r\n", ".", "€", "\u{301}", "\u{a0}"];
    let mut texts = Vec::new();
    for unit in units {
        for len in [63, 64, 65, 200, 1100, 3000] {
            for lead in ["", "x", " ", "  ", "é", ".", "A"] {
                for tail in ["", "b", " c", "'s", "\n", "1"] {
                    texts.push(format!("{lead}{}{tail}", unit.repeat(len / unit.len() + 1)));
                }
            }
        }
    }
    // Mixed runs whose pieces straddle block edges at every offset.
    for shift in 0..70 {
        texts.push(format!("{}{}", "x".repeat(shift), "HTTPServer déjà   vu\n\n  1234567 ..!? 'll Ωμέγα ".repeat(40)));
    }
    check_all(texts.into_iter(), 7);
}

/// The masks against the scalar scanners, piece for piece, on much more
/// random text than the regex path can check: every window of the mask
/// path, and every fallback to the scalar one, is crossed many times.
#[test]
fn masks_agree_with_the_scalar_scanners() {
    use crate::scan::{Preset, Scanner};
    let mut g = Gen::new(0x5EED_0003);
    for n in 0..scaled(4000) {
        let text = g.text(if n % 10 == 0 { 600 } else { 40 });
        for preset in [Preset::Gpt2, Preset::Cl100k, Preset::O200k] {
            let scanner = Scanner::new(preset);
            let (mut got, mut want) = (Vec::new(), Vec::new());
            scanner.split(&text, &mut |p| got.push(p));
            scanner.split_scalar(&text, &mut |p| want.push(p));
            assert_eq!(got, want, "{preset:?} masks vs scalar on {text:?}");
        }
    }
}

/// Chains of contractions, where whether an apostrophe ends one depends on
/// every apostrophe before it, across window edges (found by fuzzing).
#[test]
fn contraction_chains() {
    let mut texts = Vec::new();
    for unit in ["'s", "'\u{17f}", "'ll", "'S", "'t'"] {
        for n in [1, 2, 3, 10, 25, 40] {
            for lead in ["", "x", "ab", " ", "\u{17f}", "1"] {
                for tail in ["", "\u{200b}\u{200b}  ", "x", " 's"] {
                    texts.push(format!("{lead}{}{tail}", unit.repeat(n)));
                }
            }
        }
    }
    check_all(texts.into_iter(), 1);
}
