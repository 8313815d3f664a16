use super::*;

fn fancy_pieces(pattern: &str, text: &str) -> Vec<String> {
    let re = fancy_regex::Regex::new(pattern).unwrap();
    re.find_iter(text).map(|m| m.unwrap().as_str().to_string()).filter(|s| !s.is_empty()).collect()
}

fn ours(spec: PreTokenizerSpec, text: &str) -> Vec<String> {
    PreTokenizer::new(spec).unwrap().pieces(text).unwrap().into_iter().map(String::from).collect()
}

const CASES: &[&str] = &[
    "Hello world",
    "Hello   world",
    "  leading and trailing  ",
    "a  \nb",
    "a \n\n  b\r\n\tc",
    "x\u{a0}\u{a0}y",
    "tab\t\tsep\u{3000}\u{3000}end",
    "I'm they're we'LL 'S",
    "1234567 12 3.14",
    "日本語のテキスト、句読点。",
    "مرحبا بالعالم",
    "e\u{301}\u{301} caf\u{e9}",
    "🎉🎉 emoji  😀",
    "\n\n\n",
    "   ",
    "a\r\n\r\n   b",
    "foo/bar//baz\n\n/x",
    "UPPER lower MiXeD ÉCOLE école",
];

#[test]
fn presets_equal_published_regexes() {
    for p in PRESETS.iter().filter(|p| p.regex().is_some_and(|r| r.split != Split::Isolated)) {
        let (spec, pat) = (PreTokenizerSpec::Preset(p), p.regex().unwrap().pattern);
        for text in CASES {
            assert_eq!(ours(spec.clone(), text), fancy_pieces(pat, text), "{spec:?} on {text:?}");
        }
    }
}

#[test]
fn superword_equals_isolated_split_of_the_published_pattern() {
    let re = fancy_regex::Regex::new(preset_pattern("superword").unwrap()).unwrap();
    let cases = [
        "by the way, it is 12345 years old!! Really?? Yes.",
        "two  spaces   three    four",
        "trailing   ",
        "a : b: c:: d\n\nnext line/ path//x",
        "日本語、テキスト。 x",
        " lead",
    ];
    for text in cases {
        let expected = crate::scan::tests::fancy_isolated(&re, text);
        let got = ours(PreTokenizerSpec::SUPERWORD, text);
        assert_eq!(got, expected, "{text:?}");
        assert_eq!(got.concat(), text);
    }
}

/// The table agrees with the model files' names (serde) and with itself.
#[test]
fn preset_table_names_are_the_serde_tags() {
    for &p in PRESETS {
        let spec = PreTokenizerSpec::Preset(p);
        let json = serde_json::to_value(&spec).unwrap();
        assert_eq!(json, serde_json::json!({"type": p.name}));
        assert_eq!(serde_json::from_value::<PreTokenizerSpec>(json).unwrap(), spec);
        assert_eq!(PreTokenizerSpec::named(p.name), Some(spec.clone()));
        assert_eq!(spec.name(), p.name);
        for alias in p.aliases {
            assert_eq!(PreTokenizerSpec::named(alias), Some(spec.clone()));
            // A model file stores the exact name.
            assert!(serde_json::from_value::<PreTokenizerSpec>(serde_json::json!({"type": alias})).is_err());
        }
        assert_eq!(spec.pattern(), p.regex().map(|r| r.pattern));
        assert!(PreTokenizer::new(spec.clone()).is_ok());
        assert!(PreTokenizer::regex_reference(spec.clone()).is_ok());
    }
    assert!(preset(DEFAULT_PRETOKENIZER).is_some());
    let custom = PreTokenizerSpec::Regex { pattern: r"\w+".into(), isolated: true };
    let json = serde_json::to_value(&custom).unwrap();
    assert_eq!(json, serde_json::json!({"type": "regex", "pattern": r"\w+", "isolated": true}));
    assert_eq!(serde_json::from_value::<PreTokenizerSpec>(json).unwrap(), custom);
    let imported = serde_json::json!({"type": "regex", "pattern": "x"});
    assert_eq!(serde_json::from_value::<PreTokenizerSpec>(imported).unwrap(), PreTokenizerSpec::Regex { pattern: "x".into(), isolated: false });
    let err = serde_json::from_value::<PreTokenizerSpec>(serde_json::json!({"type": "bogus"})).unwrap_err().to_string();
    assert!(err.contains("unknown pretokenizer type \"bogus\"") && err.contains("gpt2, cl100k"), "{err}");
}

/// Across the seam a name is a preset (its name or an alias) and a regex
/// is tagged: a regex spelled like a preset's name is a regex, and a bare
/// string that names no preset is refused, not taken for a regex.
#[test]
fn a_choice_is_a_preset_or_a_tagged_regex() {
    let read = |v: serde_json::Value| serde_json::from_value::<PreTokenizerChoice>(v).map(|c| c.spec());
    assert_eq!(read(serde_json::json!("o200k_base")).unwrap(), PreTokenizerSpec::O200K);
    assert_eq!(read(serde_json::json!({"preset": "cl100k"})).unwrap(), PreTokenizerSpec::CL100K);
    assert_eq!(
        read(serde_json::json!({"regex": "cl100k_base"})).unwrap(),
        PreTokenizerSpec::Regex { pattern: "cl100k_base".into(), isolated: true }
    );
    let err = read(serde_json::json!(r"\w+")).unwrap_err().to_string();
    assert!(err.contains("is not a preset") && err.contains("{\"regex\""), "{err}");
    assert!(read(serde_json::json!({"regex": "a", "preset": "gpt2"})).is_err());
    assert!(read(serde_json::json!({"pattern": "a"})).is_err());
    for choice in [PreTokenizerChoice::Preset(&presets::GPT2), PreTokenizerChoice::Regex("gpt2".into())] {
        assert_eq!(serde_json::from_value::<PreTokenizerChoice>(serde_json::to_value(&choice).unwrap()).unwrap(), choice);
    }
}

#[test]
fn presets_cover_text() {
    for spec in PRESETS.iter().filter(|p| p.regex().is_some_and(|r| r.split != Split::Isolated)).map(|&p| PreTokenizerSpec::Preset(p)) {
        for text in CASES {
            assert_eq!(ours(spec.clone(), text).concat(), *text);
        }
    }
}

#[test]
fn whitespace_and_none() {
    assert_eq!(ours(PreTokenizerSpec::WHITESPACE, " a  b\u{1c}c\n"), vec!["a", "b", "c"]);
    assert_eq!(ours(PreTokenizerSpec::NONE, "a b"), vec!["a b"]);
    assert!(ours(PreTokenizerSpec::NONE, "").is_empty());
}

#[test]
fn custom_regex_backtracking_is_bounded() {
    let p = PreTokenizer::new(PreTokenizerSpec::Regex { pattern: r"(a+)+\1b".into(), isolated: true }).unwrap();
    let text = "a".repeat(40);
    assert!(p.pieces(&text).is_err() || p.pieces(&text).unwrap().is_empty());
    assert!(PreTokenizer::new(PreTokenizerSpec::Regex { pattern: "(".into(), isolated: true }).is_err());
}

#[test]
fn specials_leftmost_longest() {
    let s = SpecialSplitter::new(&["<s>".into(), "<s>x".into(), "</s>".into()]).unwrap();
    let mut out = Vec::new();
    s.split::<()>(b"a<s>xb</s><s>", &mut |seg| {
        out.push(seg);
        Ok(())
    })
    .unwrap();
    assert_eq!(
        out,
        vec![Segment::Text(b"a"), Segment::Special(1), Segment::Text(b"b"), Segment::Special(2), Segment::Special(0)]
    );
}

#[test]
fn utf8_runs_keep_every_byte() {
    let data = b"ab\xff\xfecd\xe2\x82";
    let mut out: Vec<std::result::Result<String, Vec<u8>>> = Vec::new();
    utf8_runs::<()>(data, &mut |r| {
        out.push(r.map(String::from).map_err(<[u8]>::to_vec));
        Ok(())
    })
    .unwrap();
    assert_eq!(out, vec![Ok("ab".into()), Err(vec![0xff, 0xfe]), Ok("cd".into()), Err(vec![0xe2, 0x82])]);
}

/// A regex row without a scanner, as a new preset starts: a row and nothing
/// else (it is no preset of `PRESETS`, so no model can name it).
const WORDS_DIGIT_PAIRS: PresetDef = PresetDef {
    name: "words-digit-pairs",
    aliases: &[],
    about: "letters, digits two at a time, other runs",
    cut: Cut::Regex(PresetRegex {
        pattern: r" ?\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
        fast: r" ?\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]+|\s+",
        split: Split::Covering(Lookahead::AnyWhitespace),
        scanner: None,
    }),
};

#[test]
fn a_row_without_a_scanner_runs_on_the_regex_path() {
    let spec = PreTokenizerSpec::Preset(&WORDS_DIGIT_PAIRS);
    let p = PreTokenizer::new(spec.clone()).unwrap();
    assert!(matches!(p.engine, Engine::Dfa { .. }), "{p:?}");
    for text in CASES {
        assert_eq!(ours(spec.clone(), text), fancy_pieces(WORDS_DIGIT_PAIRS.regex().unwrap().pattern, text), "{text:?}");
        assert_eq!(ours(spec.clone(), text).concat(), *text);
    }
    assert_eq!(spec.pattern(), WORDS_DIGIT_PAIRS.regex().map(|r| r.pattern));
}
