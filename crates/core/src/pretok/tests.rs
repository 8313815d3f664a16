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
    for p in PRESETS.iter().filter(|p| p.regex.as_ref().is_some_and(|r| r.cut != Cut::Isolated)) {
        let (spec, pat) = (p.spec.clone(), p.regex.as_ref().unwrap().pattern);
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
        let got = ours(PreTokenizerSpec::Superword, text);
        assert_eq!(got, expected, "{text:?}");
        assert_eq!(got.concat(), text);
    }
}

/// The table agrees with the model files' names (serde) and with itself.
#[test]
fn preset_table_names_are_the_serde_tags() {
    for p in &PRESETS {
        let tag = serde_json::to_value(&p.spec).unwrap()["type"].as_str().unwrap().to_string();
        assert_eq!(tag, p.name);
        assert_eq!(PreTokenizerSpec::from_name(p.name), p.spec);
        assert_eq!(p.spec.name(), p.name);
        for alias in p.aliases {
            assert_eq!(PreTokenizerSpec::from_name(alias), p.spec);
        }
        assert_eq!(p.spec.pattern(), p.regex.as_ref().map(|r| r.pattern));
        assert!(PreTokenizer::new(p.spec.clone()).is_ok());
        assert!(PreTokenizer::regex_reference(p.spec.clone()).is_ok());
    }
    assert!(preset(DEFAULT_PRETOKENIZER).is_some());
}

#[test]
fn presets_cover_text() {
    for spec in [PreTokenizerSpec::Gpt2, PreTokenizerSpec::Cl100k, PreTokenizerSpec::O200k] {
        for text in CASES {
            assert_eq!(ours(spec.clone(), text).concat(), *text);
        }
    }
}

#[test]
fn whitespace_and_none() {
    assert_eq!(ours(PreTokenizerSpec::Whitespace, " a  b\u{1c}c\n"), vec!["a", "b", "c"]);
    assert_eq!(ours(PreTokenizerSpec::None, "a b"), vec!["a b"]);
    assert!(ours(PreTokenizerSpec::None, "").is_empty());
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
