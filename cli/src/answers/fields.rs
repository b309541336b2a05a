//! One prompt per field of an elicitation form, by kind: text and numbers are
//! typed and asked again until they fit the field, a choice is a list, several
//! choices a checklist, yes-or-no a confirm.
//!
//! `None` leaves the field out of the answer: the library then fills its
//! default, or refuses the answer if the field is required and has none, which
//! the prompts do not let happen. Every text a server wrote is shown escaped.

use inquire::list_option::ListOption;
use inquire::validator::Validation;
use inquire::{Confirm, InquireError, MultiSelect, Select, Text};
use mcpvisor_protocol::mcp::elicitation::{Choice, Field, FieldKind, Form, StringFormat};
use serde_json::{Map, Value};

use crate::output::clean_line;

const LEAVE_OUT: &str = "(leave out)";

/// Asks for one field; `Err` when the person cancelled or the terminal failed.
pub(super) fn prompt(field: &Field) -> Result<Option<Value>, InquireError> {
    let label = format!(
        "{} [{}]",
        clean_line(field.title.as_deref().unwrap_or(&field.name)),
        hint(field)
    );
    let help = help(field);
    match &field.kind {
        FieldKind::Text { .. } => typed(field, &label, &help, text),
        FieldKind::Number { integer: true, .. } => typed(field, &label, &help, integer),
        FieldKind::Number { .. } => typed(field, &label, &help, number),
        FieldKind::Boolean => boolean(field, &label, &help),
        FieldKind::Choice(options) => choice(field, options, &label, &help),
        FieldKind::MultiChoice { options, .. } => several(field, options, &label, &help),
        // A kind this CLI cannot show is left to the form's default.
        _ => Ok(None),
    }
}

/// Whether `value` fits `field` (the sentence a person is shown if not).
fn fits(field: &Field, value: &Value) -> Result<(), String> {
    let one = Form {
        fields: vec![field.clone()],
    };
    let mut given = Map::new();
    given.insert(field.name.clone(), value.clone());
    one.complete(Some(&given)).map(|_| ()).map_err(|e| e.reason)
}

/// May this field be left out (Enter on nothing)?
fn skippable(field: &Field) -> bool {
    !field.required || field.default.is_some()
}

type Parse = fn(&str) -> Result<Value, String>;

fn text(input: &str) -> Result<Value, String> {
    Ok(Value::String(input.to_string()))
}

fn integer(input: &str) -> Result<Value, String> {
    input
        .trim()
        .parse::<i64>()
        .map(Value::from)
        .map_err(|_| "type a whole number, like 42".into())
}

fn number(input: &str) -> Result<Value, String> {
    if let Ok(whole) = input.trim().parse::<i64>() {
        return Ok(Value::from(whole));
    }
    input
        .trim()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map(Value::Number)
        .ok_or_else(|| "type a number, like 3.14".into())
}

/// The value typed, `None` for nothing typed on a field that may be left out.
fn read(field: &Field, input: &str, parse: Parse) -> Result<Option<Value>, String> {
    if input.is_empty() {
        return if skippable(field) {
            Ok(None)
        } else {
            Err("required: type a value".into())
        };
    }
    let value = parse(input)?;
    fits(field, &value).map_err(|why| clean_line(&why))?;
    Ok(Some(value))
}

fn typed(
    field: &Field,
    label: &str,
    help: &str,
    parse: Parse,
) -> Result<Option<Value>, InquireError> {
    let checked = field.clone();
    let validator = move |input: &str| {
        Ok(match read(&checked, input, parse) {
            Ok(_) => Validation::Valid,
            Err(why) => Validation::Invalid(why.into()),
        })
    };
    let placeholder = field.default.as_ref().map(shown);
    // The answered line says what Enter on nothing meant.
    let nothing = match &placeholder {
        Some(default) => format!("{default} (default)"),
        None => "(left out)".to_string(),
    };
    let answered = move |input: &str| {
        if input.is_empty() {
            nothing.clone()
        } else {
            input.to_string()
        }
    };
    let mut prompt = Text::new(label)
        .with_help_message(help)
        .with_formatter(&answered)
        .with_validator(validator);
    if let Some(placeholder) = &placeholder {
        prompt = prompt.with_placeholder(placeholder);
    }
    let input = prompt.prompt()?;
    read(field, &input, parse).map_err(|why| InquireError::Custom(why.into()))
}

fn boolean(field: &Field, label: &str, help: &str) -> Result<Option<Value>, InquireError> {
    if !field.required && field.default.is_none() {
        let picked = pick(
            label,
            help,
            vec![LEAVE_OUT.into(), "yes".into(), "no".into()],
            0,
        )?;
        return Ok((picked > 0).then_some(Value::Bool(picked == 1)));
    }
    let mut prompt = Confirm::new(label).with_help_message(help);
    if let Some(default) = field.default.as_ref().and_then(Value::as_bool) {
        prompt = prompt.with_default(default);
    }
    Ok(Some(Value::Bool(prompt.prompt()?)))
}

fn choice(
    field: &Field,
    options: &[Choice],
    label: &str,
    help: &str,
) -> Result<Option<Value>, InquireError> {
    // An optional field without a default can be left out, listed first.
    let offset = usize::from(!field.required && field.default.is_none());
    let mut items: Vec<String> = Vec::with_capacity(options.len() + offset);
    if offset == 1 {
        items.push(LEAVE_OUT.into());
    }
    items.extend(options.iter().map(choice_text));
    let start = field
        .default
        .as_ref()
        .and_then(Value::as_str)
        .and_then(|d| options.iter().position(|o| o.value == d))
        .map_or(0, |i| i + offset);
    let picked = pick(label, help, items, start)?;
    Ok(picked
        .checked_sub(offset)
        .map(|i| Value::String(options[i].value.clone())))
}

fn several(
    field: &Field,
    options: &[Choice],
    label: &str,
    help: &str,
) -> Result<Option<Value>, InquireError> {
    let values: Vec<String> = options.iter().map(|o| o.value.clone()).collect();
    let picked_values = {
        let values = values.clone();
        move |picked: &[ListOption<&String>]| -> Value {
            Value::Array(
                picked
                    .iter()
                    .map(|p| Value::String(values[p.index].clone()))
                    .collect(),
            )
        }
    };
    let defaults: Vec<usize> = match &field.default {
        Some(Value::Array(chosen)) => chosen
            .iter()
            .filter_map(|c| values.iter().position(|v| Some(v.as_str()) == c.as_str()))
            .collect(),
        _ => Vec::new(),
    };
    let leave_out = !field.required && field.default.is_none();
    let checked = field.clone();
    let to_value = picked_values.clone();
    let validator = move |picked: &[ListOption<&String>]| {
        if picked.is_empty() && leave_out {
            return Ok(Validation::Valid);
        }
        Ok(match fits(&checked, &to_value(picked)) {
            Ok(()) => Validation::Valid,
            Err(why) => Validation::Invalid(clean_line(&why).into()),
        })
    };
    let items: Vec<String> = options.iter().map(choice_text).collect();
    let picked = MultiSelect::new(label, items)
        .with_help_message(help)
        .with_default(&defaults)
        .with_validator(validator)
        .raw_prompt()?;
    let borrowed: Vec<ListOption<&String>> = picked
        .iter()
        .map(|p| ListOption::new(p.index, &p.value))
        .collect();
    if borrowed.is_empty() && leave_out {
        return Ok(None);
    }
    Ok(Some(picked_values(&borrowed)))
}

/// The index picked from a list.
fn pick(label: &str, help: &str, items: Vec<String>, start: usize) -> Result<usize, InquireError> {
    Ok(Select::new(label, items)
        .with_help_message(help)
        .with_starting_cursor(start)
        .raw_prompt()?
        .index)
}

fn choice_text(choice: &Choice) -> String {
    clean_line(choice.title.as_deref().unwrap_or(&choice.value))
}

/// A default as a person reads it.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => clean_line(s),
        other => clean_line(&other.to_string()),
    }
}

/// What the field takes, after its title: `integer from 1 to 100, required`.
fn hint(field: &Field) -> String {
    let range = |low: Option<String>, high: Option<String>, unit: &str| match (low, high) {
        (Some(l), Some(h)) => format!(" {l} to {h}{unit}"),
        (Some(l), None) => format!(" at least {l}{unit}"),
        (None, Some(h)) => format!(" at most {h}{unit}"),
        (None, None) => String::new(),
    };
    let text = |n: &Option<u64>| n.map(|n| n.to_string());
    let mut hint = match &field.kind {
        FieldKind::Text {
            min_length,
            max_length,
            format,
        } => {
            let kind = match format {
                Some(StringFormat::Email) => "email address",
                Some(StringFormat::Uri) => "URI",
                Some(StringFormat::Date) => "date YYYY-MM-DD",
                Some(StringFormat::DateTime) => "date and time (RFC 3339)",
                None => "text",
            };
            let length = range(text(min_length), text(max_length), " characters");
            if length.is_empty() {
                kind.to_string()
            } else {
                format!("{kind},{length}")
            }
        }
        FieldKind::Number {
            integer,
            minimum,
            maximum,
        } => {
            let kind = if *integer { "integer" } else { "number" };
            let bound = |n: &Option<f64>| n.map(|n| n.to_string());
            format!("{kind}{}", range(bound(minimum), bound(maximum), ""))
        }
        FieldKind::Boolean => "yes or no".into(),
        FieldKind::Choice(_) => "pick one".into(),
        FieldKind::MultiChoice {
            min_items,
            max_items,
            ..
        } => format!("pick{}", range(text(min_items), text(max_items), "")),
        _ => "unsupported".into(),
    };
    if field.required {
        hint.push_str(", required");
    }
    hint
}

/// The field's description, then what Enter does and the keys a list takes.
fn help(field: &Field) -> String {
    let mut parts: Vec<String> = field.description.iter().map(|d| clean_line(d)).collect();
    match (&field.kind, &field.default) {
        (FieldKind::Text { .. } | FieldKind::Number { .. }, Some(default)) => {
            parts.push(format!("Enter: {}", shown(default)));
        }
        (FieldKind::Text { .. } | FieldKind::Number { .. }, None) if !field.required => {
            parts.push("Enter: leave out".into());
        }
        (FieldKind::Choice(_), _) => parts.push("↑↓ to move, Enter to pick".into()),
        (FieldKind::MultiChoice { .. }, _) => {
            parts.push("↑↓ to move, Space to tick, Enter when done".into());
        }
        _ => {}
    }
    parts.join(" · ")
}
