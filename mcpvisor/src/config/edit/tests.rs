use super::*;
use serde_json::json;

fn path() -> PathBuf {
    PathBuf::from("/p/.mcp.json")
}

const CLAUDE: &str = r#"{
  "mcpServers": {
    "zeta": {
      "command": "npx",
      "args": ["-y", "z"],
      "env": {"TOKEN": "${TOKEN}"}
    },
    "alpha": {"type": "http", "url": "https://a/mcp?key=k"}
  },
  "other": {"b": 1, "a": 2}
}
"#;

#[test]
fn an_unchanged_document_renders_as_it_was_read() {
    let four = CLAUDE
        .replace("\n  ", "\n    ")
        .replace("\n      ", "\n        ");
    let tabs = "{\n\t\"servers\": {\n\t\t\"x\": {\n\t\t\t\"command\": \"a\"\n\t\t}\n\t}\n}";
    for text in [CLAUDE, &four, tabs] {
        let doc = McpDocument::parse(text, &path()).unwrap();
        assert_eq!(doc.render(), text);
    }
}

#[test]
fn adding_then_removing_leaves_the_file_byte_for_byte() {
    let mut doc = McpDocument::parse(CLAUDE, &path()).unwrap();
    doc.add("new", &json!({"command": "srv"})).unwrap();
    let added = doc.render();
    assert!(
        added.contains("\"alpha\": {\"type\": \"http\", \"url\": \"https://a/mcp?key=k\"},\n    \"new\": {\n      \"command\": \"srv\"\n    }\n  },"),
        "{added}"
    );
    // The others keep their order, text and place; the new one is last.
    let order: Vec<usize> = ["\"zeta\"", "\"alpha\"", "\"new\"", "\"other\""]
        .iter()
        .map(|k| added.find(k).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{added}");
    assert!(added.contains("\"other\": {\"b\": 1, \"a\": 2}"), "{added}");
    let mut doc = McpDocument::parse(&added, &path()).unwrap();
    doc.remove("new").unwrap();
    assert_eq!(doc.render(), CLAUDE);
}

#[test]
fn names_are_refused_or_missing_by_name() {
    let mut doc = McpDocument::parse(CLAUDE, &path()).unwrap();
    assert!(matches!(
        doc.add("zeta", &json!({})),
        Err(EditError::Exists { name, .. }) if name == "zeta"
    ));
    assert!(matches!(
        doc.remove("nope"),
        Err(EditError::Missing { name, .. }) if name == "nope"
    ));
    doc.remove("zeta").unwrap();
    doc.remove("alpha").unwrap();
    assert_eq!(
        doc.render(),
        "{\n  \"mcpServers\": {},\n  \"other\": {\"b\": 1, \"a\": 2}\n}\n"
    );
}

#[test]
fn a_file_without_entries_gets_them_and_a_broken_one_is_refused() {
    let mut doc = McpDocument::parse("{\"inputs\": []}", &path()).unwrap();
    doc.add("a", &json!({"command": "x"})).unwrap();
    assert_eq!(
        doc.render(),
        "{\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"x\"\n    }\n  },\n  \"inputs\": []\n}"
    );
    let mut empty = McpDocument::empty(&path());
    empty.add("a", &json!({"command": "x"})).unwrap();
    let text = empty.render();
    assert!(
        McpConfig::parse(&text, &path())
            .unwrap()
            .servers
            .contains_key("a")
    );
    for broken in ["[1]", "{\"mcpServers\": {", "{\"mcpServers\": []}"] {
        assert!(McpDocument::parse(broken, &path()).is_err(), "{broken}");
    }
}
