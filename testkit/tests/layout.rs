//! The project's shape, checked: every path the README and docs/ name from a
//! crate's folder exists, so a move that leaves the docs behind fails here
//! instead of misleading the next reader.

use std::path::{Path, PathBuf};

/// The folders a documented path may start from: the workspace's crates and tools.
const ROOTS: [&str; 15] = [
    "protocol",
    "transports",
    "auth",
    "actors",
    "mcpvisor",
    "serve",
    "cluster",
    "cli",
    "demo",
    "chaos",
    "testkit",
    "bench",
    "fuzz",
    "scripts",
    "docs",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The paths in `text` that start at one of [`ROOTS`] and name a file
/// (`actors/src/lane.rs`, `cli/tests/it/config/mod.rs`), with any
/// `::item` suffix left off.
fn named_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    for root in ROOTS {
        let needle = format!("{root}/");
        let mut from = 0;
        while let Some(at) = text[from..].find(&needle) {
            let start = from + at;
            from = start + needle.len();
            // A path starts the word: `mcpvisor/` inside `../mcpvisor/` or `x_cli/` is not one.
            if start > 0 {
                let before = bytes[start - 1];
                if before.is_ascii_alphanumeric() || b"_-./".contains(&before) {
                    continue;
                }
            }
            let end = text[start..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || "_-./".contains(c)))
                .map_or(text.len(), |n| start + n);
            let path = text[start..end].trim_end_matches('.');
            let file = path.rsplit('/').next().unwrap_or("");
            let named_file = [".rs", ".md", ".sh", ".toml", ".json", ".mjs", ".py"]
                .iter()
                .any(|ext| file.ends_with(ext));
            if named_file {
                out.push(path.to_string());
            }
        }
    }
    out
}

#[test]
fn every_path_the_docs_name_exists() {
    let root = workspace();
    let mut docs = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let path = entry.expect("a docs/ entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            docs.push(path);
        }
    }
    let mut missing = Vec::new();
    let mut seen = 0;
    for doc in &docs {
        let text = std::fs::read_to_string(doc).expect("a readable doc");
        for path in named_paths(&text) {
            seen += 1;
            if !root.join(&path).exists() {
                missing.push(format!("{}: {path}", doc.file_name().unwrap().display()));
            }
        }
    }
    // The docs name hundreds of files; finding none means the reading broke.
    assert!(seen > 100, "only {seen} paths found in {docs:?}");
    assert!(
        missing.is_empty(),
        "paths the docs name that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn paths_are_read_whole_and_only_from_a_crate_folder() {
    let text = "see `actors/src/lane.rs::x`, ../mcpvisor/src/lib.rs, \
                my_cli/src/a.rs and cli/tests/it/config/mod.rs. Also serve/src/.";
    assert_eq!(
        named_paths(text),
        ["actors/src/lane.rs", "cli/tests/it/config/mod.rs"]
    );
}

/// The module order docs/ARCHITECTURE.md gives for each crate folder: its
/// "Module order" section, one line per crate, `` - `folder`: a b {c d} e ``,
/// lowest first; modules in braces are one layer.
fn module_orders(architecture: &str) -> Vec<(String, Vec<Vec<String>>)> {
    let start = architecture
        .find("## Module order")
        .expect("docs/ARCHITECTURE.md has a \"Module order\" section");
    let section = &architecture[start + 3..];
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut orders = Vec::new();
    for line in section.lines() {
        let Some(rest) = line.strip_prefix("- `") else {
            continue;
        };
        let Some((folder, layers)) = rest.split_once("`: ") else {
            continue;
        };
        let mut parsed = Vec::new();
        let mut group: Option<Vec<String>> = None;
        for word in layers.split_whitespace() {
            let name = word.trim_matches(|c| c == '{' || c == '}' || c == ',' || c == '.');
            if word.starts_with('{') {
                group = Some(Vec::new());
            }
            match group.as_mut() {
                Some(g) => g.push(name.to_string()),
                None => parsed.push(vec![name.to_string()]),
            }
            if word.trim_end_matches([',', '.']).ends_with('}') {
                parsed.push(group.take().expect("a group that was opened"));
            }
        }
        assert!(group.is_none(), "an unclosed group for `{folder}`");
        orders.push((folder.to_string(), parsed));
    }
    orders
}

/// A crate's top-level modules: `src/<m>.rs` and `src/<m>/` (the root files aside).
fn top_modules(src: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(src)
        .expect("a crate's src/")
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let module = match name.strip_suffix(".rs") {
                Some(m) => m.to_string(),
                None if e.path().is_dir() && name != "bin" => name,
                None => return None,
            };
            // `test_…` modules are unit-test support, which may reach anything.
            let root_file = ["lib", "main"].contains(&module.as_str());
            (!root_file && !module.starts_with("test_")).then_some(module)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Every file of module `m`: `src/m.rs` and everything under `src/m/`.
fn module_files(src: &Path, m: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    let file = src.join(format!("{m}.rs"));
    if file.exists() {
        out.push(file);
    }
    walk(&src.join(m), &mut out);
    out
}

/// The top-level modules `code` names through `crate::`, with where: code only
/// (comments are not arrows), and not in unit tests (`tests.rs`, or a
/// `#[cfg(test)] mod`, which may reach anything in their crate).
fn crate_arrows(code: &str) -> Vec<(String, usize)> {
    let code = match code.find("#[cfg(test)]\nmod ") {
        Some(at) => &code[..at],
        None => code,
    };
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let line = line.split("//").next().unwrap_or("");
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            if let Some(inner) = rest.strip_prefix('{') {
                let inner = inner.split('}').next().unwrap_or("");
                for item in inner.split(',') {
                    let head = item.trim().split("::").next().unwrap_or("");
                    out.push((head.to_string(), n + 1));
                }
            } else {
                let head: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                out.push((head, n + 1));
            }
        }
    }
    out
}

#[test]
fn modules_import_only_modules_below_them() {
    let root = workspace();
    let architecture =
        std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("docs/ARCHITECTURE.md");
    let orders = module_orders(&architecture);
    assert!(orders.len() >= 8, "orders read: {orders:?}");
    let mut wrong = Vec::new();
    for (folder, layers) in &orders {
        let src = root.join(folder).join("src");
        let rank = |m: &str| layers.iter().position(|layer| layer.iter().any(|x| x == m));
        let modules = top_modules(&src);
        for m in &modules {
            if rank(m).is_none() {
                wrong.push(format!("{folder}: `{m}` is not in the module order"));
            }
        }
        for m in &modules {
            let Some(own) = rank(m) else { continue };
            for file in module_files(&src, m) {
                if file.file_name().is_some_and(|n| n == "tests.rs")
                    || file.components().any(|c| c.as_os_str() == "tests")
                {
                    continue;
                }
                let code = std::fs::read_to_string(&file).expect("a readable source file");
                for (target, line) in crate_arrows(&code) {
                    let Some(theirs) = modules.contains(&target).then(|| rank(&target)).flatten()
                    else {
                        continue;
                    };
                    if theirs > own {
                        let shown = file.strip_prefix(&root).unwrap_or(&file).display();
                        wrong.push(format!(
                            "{shown}:{line}: `{m}` uses `{target}`, which the order puts above it"
                        ));
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "against the module order of docs/ARCHITECTURE.md:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn an_arrow_up_or_across_a_layer_is_seen() {
    let code = "use crate::lane::CallLane;\nuse crate::{messages::X, supervisor};\n\
                // crate::host in a comment\nlet x = crate::routes::f();\n\
                #[cfg(test)]\nmod tests { use crate::host; }\n";
    let names: Vec<_> = crate_arrows(code).into_iter().map(|(m, _)| m).collect();
    assert_eq!(names, ["lane", "messages", "supervisor", "routes"]);
    let orders =
        module_orders("## Module order\n\n- `x`: a {b c} d\n- `y`: e\n\n## Next\n- `z`: never");
    assert_eq!(
        orders,
        [
            (
                "x".to_string(),
                vec![
                    vec!["a".to_string()],
                    vec!["b".into(), "c".into()],
                    vec!["d".into()]
                ]
            ),
            ("y".to_string(), vec![vec!["e".to_string()]]),
        ]
    );
}
