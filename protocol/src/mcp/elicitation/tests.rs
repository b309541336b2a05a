use super::*;
use proptest::prelude::*;
use serde_json::json;

/// The shape of the conformance suite's SEP-1034 form: a default for every type.
fn defaults_form() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": true}
    }, "required": ["name"]})
}

#[test]
fn accepting_without_values_sends_every_default() {
    let form = Form::parse(&defaults_form()).unwrap();
    let answer = form.complete(None).unwrap();
    assert_eq!(
        Value::Object(answer),
        json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
    );
}

#[test]
fn given_values_win_over_defaults_and_are_checked() {
    let form = Form::parse(&defaults_form()).unwrap();
    let given = json!({"age": 41, "status": "pending"});
    let answer = form.complete(given.as_object()).unwrap();
    assert_eq!(answer["age"], 41);
    assert_eq!(answer["status"], "pending");
    assert_eq!(answer["name"], "John Doe");
    for (bad, field) in [
        (json!({"age": 4.5}), "age"),
        (json!({"age": "4"}), "age"),
        (json!({"status": "gone"}), "status"),
        (json!({"verified": "yes"}), "verified"),
        (json!({"nickname": "x"}), "nickname"),
    ] {
        let err = form.complete(bad.as_object()).unwrap_err();
        assert_eq!(err.field, field, "{bad}: {err}");
    }
}

#[test]
fn a_required_field_without_value_or_default_is_refused() {
    let form = Form::parse(&json!({"type": "object",
        "properties": {"email": {"type": "string", "format": "email"}, "note": {"type": "string"}},
        "required": ["email"]}))
    .unwrap();
    let err = form.complete(None).unwrap_err();
    assert_eq!(err.field, "email");
    assert!(err.reason.contains("required"), "{err}");
    // An optional field left out stays out.
    let answer = form
        .complete(json!({"email": "a@b.example"}).as_object())
        .unwrap();
    assert_eq!(Value::Object(answer), json!({"email": "a@b.example"}));
    let err = form
        .complete(json!({"email": "not an address"}).as_object())
        .unwrap_err();
    assert!(err.reason.contains("email"), "{err}");
}

#[test]
fn limits_formats_and_choices_are_checked() {
    let form = Form::parse(&json!({"type": "object", "properties": {
        "code": {"type": "string", "minLength": 2, "maxLength": 4},
        "n": {"type": "number", "minimum": 0, "maximum": 10},
        "site": {"type": "string", "format": "uri"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "color": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 2}
    }}))
    .unwrap();
    let ok = json!({"code": "abc", "n": 10, "site": "https://x.example/p", "day": "2024-02-29",
        "at": "2026-11-30T13:42:00.5+01:00", "color": "r", "tags": ["a", "c"]});
    assert!(form.complete(ok.as_object()).is_ok());
    for bad in [
        json!({"code": "a"}),
        json!({"code": "abcde"}),
        json!({"n": -1}),
        json!({"n": 10.5}),
        json!({"site": "no scheme"}),
        json!({"day": "2023-02-29"}),
        json!({"day": "2024-13-01"}),
        json!({"at": "2026-11-30 13:42:00Z"}),
        json!({"at": "2026-11-30T25:00:00Z"}),
        json!({"color": "Red"}),
        json!({"tags": []}),
        json!({"tags": ["a", "b", "c"]}),
        json!({"tags": ["z"]}),
    ] {
        assert!(form.complete(bad.as_object()).is_err(), "{bad} passed");
    }
    let color = &form.fields.iter().find(|f| f.name == "color").unwrap().kind;
    assert_eq!(
        color,
        &FieldKind::Choice(vec![
            Choice {
                value: "r".into(),
                title: Some("Red".into())
            },
            Choice {
                value: "g".into(),
                title: None
            },
        ])
    );
}

#[test]
fn a_default_that_does_not_fit_its_field_is_not_used() {
    let form = Form::parse(&json!({"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 1, "default": 0},
        "s": {"type": "string", "enum": ["x"], "default": "y"}
    }}))
    .unwrap();
    assert!(form.fields.iter().all(|f| f.default.is_none()));
    assert_eq!(form.complete(None).unwrap(), Map::new());
}

#[test]
fn schemas_that_are_not_flat_forms_are_refused() {
    for (schema, expected) in [
        (json!([]), SchemaError::NotAnObject),
        (json!({"type": "string"}), SchemaError::NotAnObject),
        (json!({"type": "object"}), SchemaError::NotAnObject),
        (
            json!({"type": "object", "properties": {}, "required": ["x"]}),
            SchemaError::UnknownRequired("x".into()),
        ),
    ] {
        assert_eq!(Form::parse(&schema).unwrap_err(), expected, "{schema}");
    }
    let nested =
        json!({"type": "object", "properties": {"o": {"type": "object", "properties": {}}}});
    assert!(matches!(
        Form::parse(&nested),
        Err(SchemaError::Field { .. })
    ));
    let many: Map<String, Value> = (0..=MAX_FIELDS)
        .map(|i| (format!("f{i}"), json!({"type": "boolean"})))
        .collect();
    let big = json!({"type": "object", "properties": many});
    assert_eq!(
        Form::parse(&big).unwrap_err(),
        SchemaError::TooManyFields(MAX_FIELDS + 1)
    );
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        "[a-z@:.T+-Z0-9 ]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("string"),
            Just("integer"),
            Just("number"),
            Just("boolean"),
            Just("array"),
            Just("object")
        ]
        .prop_map(|t| json!(t)),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("type".to_string()),
                    Just("properties".to_string()),
                    Just("required".to_string()),
                    Just("enum".to_string()),
                    Just("oneOf".to_string()),
                    Just("items".to_string()),
                    Just("default".to_string()),
                    Just("const".to_string()),
                    Just("format".to_string()),
                    Just("minimum".to_string()),
                    Just("maxLength".to_string()),
                    "[a-c]".prop_map(String::from),
                ],
                inner,
                0..5,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// Whatever a server sends as a schema and whatever a host answers, the
    /// result is a form or an error, and a completed answer passes its own check.
    #[test]
    fn any_schema_and_answer_give_a_result_not_a_panic(schema in json_value(), answer in json_value()) {
        if let Ok(form) = Form::parse(&schema) {
            if let Ok(done) = form.complete(answer.as_object()) {
                prop_assert_eq!(form.complete(Some(&done)), Ok(done.clone()));
            }
        }
    }
}
