//! Microbenches of the sans-I/O protocol crate: frame decoding, SSE parsing,
//! qualified names, tool-schema conversion.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use mcpvisor_protocol::{
    FrameDecoder, QualifiedMcpToolName, STDIO_FRAME_LIMIT, SseParser, Tool, ToolDefinition,
};
use serde_json::json;

/// A typical `tools/call` answer line.
fn small_line() -> Vec<u8> {
    let mut line = json!({
        "jsonrpc": "2.0",
        "id": 42,
        "result": {"content": [{"type": "text", "text": "the quick brown fox jumps over the lazy dog"}]}
    })
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

fn frame_decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame_decode");
    let stream: Vec<u8> = small_line().repeat(1_000);
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.bench_function("1000 small lines, 8 KiB chunks", |b| {
        let mut decoder = FrameDecoder::new(STDIO_FRAME_LIMIT);
        b.iter(|| {
            let mut frames = 0usize;
            for chunk in stream.chunks(8 * 1024) {
                decoder
                    .push(black_box(chunk), |frame| frames += frame.len())
                    .unwrap();
            }
            black_box(frames)
        })
    });

    let mut large = vec![b'x'; 256 * 1024];
    large.push(b'\n');
    let stream = large.repeat(4);
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.bench_function("4 lines of 256 KiB, 64 KiB chunks", |b| {
        let mut decoder = FrameDecoder::new(STDIO_FRAME_LIMIT);
        b.iter(|| {
            let mut frames = 0usize;
            for chunk in stream.chunks(64 * 1024) {
                decoder
                    .push(black_box(chunk), |frame| frames += frame.len())
                    .unwrap();
            }
            black_box(frames)
        })
    });
    group.finish();
}

fn sse_parse(c: &mut Criterion) {
    let mut group = c.benchmark_group("sse_parse");
    let line = small_line();
    let event = format!(
        "event: message\nid: 7\ndata: {}\n\n",
        String::from_utf8_lossy(&line[..line.len() - 1])
    );
    let stream = event.repeat(1_000).into_bytes();
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.bench_function("1000 small events, 8 KiB chunks", |b| {
        b.iter_batched_ref(
            || SseParser::new(4 * 1024 * 1024),
            |parser| {
                let mut events = 0usize;
                for chunk in stream.chunks(8 * 1024) {
                    parser
                        .push(black_box(chunk), |e| events += e.data.len())
                        .unwrap();
                }
                black_box(events)
            },
            BatchSize::SmallInput,
        )
    });

    let data = "x".repeat(256 * 1024);
    let stream = format!("data: {data}\n\n").repeat(4).into_bytes();
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.bench_function("4 events of 256 KiB, 64 KiB chunks", |b| {
        b.iter_batched_ref(
            || SseParser::new(4 * 1024 * 1024),
            |parser| {
                let mut events = 0usize;
                for chunk in stream.chunks(64 * 1024) {
                    parser
                        .push(black_box(chunk), |e| events += e.data.len())
                        .unwrap();
                }
                black_box(events)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn qualified_names(c: &mut Criterion) {
    let mut group = c.benchmark_group("qualified_name");
    group.bench_function("parse", |b| {
        b.iter(|| QualifiedMcpToolName::parse(black_box("mcp__github__search_repositories")))
    });
    group.bench_function("new", |b| {
        b.iter(|| QualifiedMcpToolName::new(black_box("github"), black_box("search_repositories")))
    });
    let name = QualifiedMcpToolName::parse("mcp__github__search_repositories").unwrap();
    group.bench_function("format", |b| b.iter(|| black_box(&name).to_string()));
    group.finish();
}

fn tool_schema(c: &mut Criterion) {
    let mut group = c.benchmark_group("tool_schema");
    let tools: [(&str, Tool); 3] = [
        (
            "object schema",
            serde_json::from_value(json!({
                "name": "search_repositories",
                "description": "Search GitHub repositories",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "Search query"},
                        "page": {"type": "number", "minimum": 1},
                        "perPage": {"type": "number", "maximum": 100}
                    },
                    "required": ["query"]
                }
            }))
            .unwrap(),
        ),
        (
            "no schema",
            serde_json::from_value(json!({"name": "ping"})).unwrap(),
        ),
        (
            "non-object root",
            serde_json::from_value(json!({
                "name": "odd",
                "inputSchema": {"type": "array", "items": {"type": "string"}}
            }))
            .unwrap(),
        ),
    ];
    for (label, tool) in &tools {
        group.bench_function(format!("from_tool, {label}"), |b| {
            b.iter(|| ToolDefinition::from_tool(black_box("github"), black_box(tool)))
        });
        // What the registry does with a listing: the tool is moved in, not copied
        // (the copy made for each iteration is not measured).
        group.bench_function(format!("from_owned_tool, {label}"), |b| {
            b.iter_batched(
                || tool.clone(),
                |tool| ToolDefinition::from_owned_tool(black_box("github"), tool),
                BatchSize::SmallInput,
            )
        });
    }
    let (definition, _) = ToolDefinition::from_tool("github", &tools[0].1).unwrap();
    group.bench_function("to_anthropic_tool", |b| {
        b.iter(|| black_box(&definition).to_anthropic_tool())
    });
    group.bench_function("to_openai_function", |b| {
        b.iter(|| black_box(&definition).to_openai_function())
    });
    group.finish();
}

criterion_group!(
    benches,
    frame_decode,
    sse_parse,
    qualified_names,
    tool_schema
);
criterion_main!(benches);
