//! Elicitation forms (`elicitation/create`, form mode): the restricted schema a
//! server asks with, the defaults a client applies when the person accepts
//! without a value (SEP-1034), and the check of the answer against the schema
//! before it is sent back. Pure: no I/O, no prompting.

use serde_json::{Map, Value};

/// The most fields a form may have (a form is filled by a person).
pub const MAX_FIELDS: usize = 256;

/// A string field's `format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StringFormat {
    /// `email`.
    Email,
    /// `uri`.
    Uri,
    /// `date` (`YYYY-MM-DD`).
    Date,
    /// `date-time` (RFC 3339).
    DateTime,
}

/// One option of a choice: its value and, if given, its display name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// What is sent back.
    pub value: String,
    /// What a person is shown, if the server named it.
    pub title: Option<String>,
}

/// What a field holds.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FieldKind {
    /// Free text.
    Text {
        /// Shortest length, in characters.
        min_length: Option<u64>,
        /// Longest length, in characters.
        max_length: Option<u64>,
        /// A format the text must have.
        format: Option<StringFormat>,
    },
    /// A number (`integer` when whole numbers only).
    Number {
        /// Whole numbers only.
        integer: bool,
        /// Smallest value.
        minimum: Option<f64>,
        /// Largest value.
        maximum: Option<f64>,
    },
    /// Yes or no.
    Boolean,
    /// One of a list (`enum`, or `oneOf` of `const`s).
    Choice(Vec<Choice>),
    /// Several of a list (`type: array` of an enum).
    MultiChoice {
        /// The options.
        options: Vec<Choice>,
        /// Fewest to pick.
        min_items: Option<u64>,
        /// Most to pick.
        max_items: Option<u64>,
    },
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The property name (the key in the answer).
    pub name: String,
    /// A title for a person, if given.
    pub title: Option<String>,
    /// A description for a person, if given.
    pub description: Option<String>,
    /// What it holds.
    pub kind: FieldKind,
    /// The value used when the person gives none (already checked against the field).
    pub default: Option<Value>,
    /// Whether an answer must have it.
    pub required: bool,
}

/// A form: its fields in the server's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// The fields.
    pub fields: Vec<Field>,
}

/// Why a `requestedSchema` is not a form this client can show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The root is not `{"type": "object", "properties": {...}}`.
    #[error("the requested schema is not an object with properties")]
    NotAnObject,
    /// More fields than [`MAX_FIELDS`].
    #[error("the requested schema has {0} fields (at most {MAX_FIELDS})")]
    TooManyFields(usize),
    /// A field is not a primitive the spec allows.
    #[error("field `{field}`: {reason}")]
    Field {
        /// The property name.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// `required` names a property that does not exist.
    #[error("`required` names `{0}`, which is not a property")]
    UnknownRequired(String),
}

/// Why an answer does not fit its form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {reason}")]
pub struct AnswerError {
    /// The property name.
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

impl Form {
    /// Reads a `requestedSchema`.
    pub fn parse(schema: &Value) -> Result<Form, SchemaError> {
        let root = schema.as_object().ok_or(SchemaError::NotAnObject)?;
        if root.get("type").and_then(Value::as_str) != Some("object") {
            return Err(SchemaError::NotAnObject);
        }
        let properties = root
            .get("properties")
            .and_then(Value::as_object)
            .ok_or(SchemaError::NotAnObject)?;
        if properties.len() > MAX_FIELDS {
            return Err(SchemaError::TooManyFields(properties.len()));
        }
        let required: Vec<&str> = match root.get("required") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            Some(_) => return Err(SchemaError::NotAnObject),
        };
        if let Some(unknown) = required.iter().find(|r| !properties.contains_key(**r)) {
            return Err(SchemaError::UnknownRequired(unknown.to_string()));
        }
        let fields = properties
            .iter()
            .map(|(name, spec)| field(name, spec, required.contains(&name.as_str())))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Form { fields })
    }

    /// The answer to send for `content` (what the person gave, possibly
    /// nothing): defaults fill the fields left out, then every field is
    /// checked. Fields the form does not have are refused, not passed on.
    pub fn complete(
        &self,
        content: Option<&Map<String, Value>>,
    ) -> Result<Map<String, Value>, AnswerError> {
        let empty = Map::new();
        let content = content.unwrap_or(&empty);
        if let Some(extra) = content
            .keys()
            .find(|k| !self.fields.iter().any(|f| &f.name == *k))
        {
            return Err(AnswerError {
                field: extra.clone(),
                reason: "not a field of this form".into(),
            });
        }
        let mut answer = Map::new();
        for f in &self.fields {
            let value = match content.get(&f.name) {
                Some(Value::Null) | None => f.default.clone(),
                Some(v) => Some(v.clone()),
            };
            match value {
                Some(v) => {
                    check(&f.kind, &v).map_err(|reason| AnswerError {
                        field: f.name.clone(),
                        reason,
                    })?;
                    answer.insert(f.name.clone(), v);
                }
                None if f.required => {
                    return Err(AnswerError {
                        field: f.name.clone(),
                        reason: "required, and it has no default".into(),
                    });
                }
                None => {}
            }
        }
        Ok(answer)
    }
}

fn field(name: &str, spec: &Value, required: bool) -> Result<Field, SchemaError> {
    let bad = |reason: &str| SchemaError::Field {
        field: name.to_string(),
        reason: reason.to_string(),
    };
    let spec = spec.as_object().ok_or_else(|| bad("not a schema object"))?;
    let text = |key: &str| spec.get(key).and_then(Value::as_str).map(str::to_string);
    let count = |key: &str| spec.get(key).and_then(Value::as_u64);
    let kind = match spec.get("type").and_then(Value::as_str) {
        Some("string") => {
            if let Some(options) = spec.get("enum") {
                FieldKind::Choice(
                    legacy_choices(options, spec.get("enumNames"))
                        .ok_or_else(|| bad("`enum` must list strings"))?,
                )
            } else if let Some(options) = spec.get("oneOf") {
                FieldKind::Choice(
                    const_choices(options)
                        .ok_or_else(|| bad("`oneOf` must list `const` strings"))?,
                )
            } else {
                let format = match spec.get("format").and_then(Value::as_str) {
                    None => None,
                    Some("email") => Some(StringFormat::Email),
                    Some("uri") => Some(StringFormat::Uri),
                    Some("date") => Some(StringFormat::Date),
                    Some("date-time") => Some(StringFormat::DateTime),
                    Some(_) => return Err(bad("unknown string `format`")),
                };
                FieldKind::Text {
                    min_length: count("minLength"),
                    max_length: count("maxLength"),
                    format,
                }
            }
        }
        Some(t @ ("number" | "integer")) => FieldKind::Number {
            integer: t == "integer",
            minimum: spec.get("minimum").and_then(Value::as_f64),
            maximum: spec.get("maximum").and_then(Value::as_f64),
        },
        Some("boolean") => FieldKind::Boolean,
        Some("array") => {
            let items = spec
                .get("items")
                .and_then(Value::as_object)
                .ok_or_else(|| bad("`items` is required"))?;
            let options = match (items.get("enum"), items.get("anyOf")) {
                (Some(options), _) => legacy_choices(options, None),
                (None, Some(options)) => const_choices(options),
                (None, None) => None,
            }
            .ok_or_else(|| bad("`items` must be an enum of strings"))?;
            FieldKind::MultiChoice {
                options,
                min_items: count("minItems"),
                max_items: count("maxItems"),
            }
        }
        _ => {
            return Err(bad(
                "`type` must be string, number, integer, boolean or array",
            ));
        }
    };
    let default = match spec.get("default") {
        None | Some(Value::Null) => None,
        // A default that does not fit its own field is not used.
        Some(v) => check(&kind, v).ok().map(|()| v.clone()),
    };
    Ok(Field {
        name: name.to_string(),
        title: text("title"),
        description: text("description"),
        kind,
        default,
        required,
    })
}

fn legacy_choices(options: &Value, names: Option<&Value>) -> Option<Vec<Choice>> {
    let names: Vec<Option<String>> = names
        .and_then(Value::as_array)
        .map(|n| n.iter().map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    options
        .as_array()?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            Some(Choice {
                value: v.as_str()?.to_string(),
                title: names.get(i).cloned().flatten(),
            })
        })
        .collect()
}

fn const_choices(options: &Value) -> Option<Vec<Choice>> {
    options
        .as_array()?
        .iter()
        .map(|o| {
            Some(Choice {
                value: o.get("const")?.as_str()?.to_string(),
                title: o.get("title").and_then(Value::as_str).map(str::to_string),
            })
        })
        .collect()
}

/// Checks one value against its field; the error is a sentence.
fn check(kind: &FieldKind, v: &Value) -> Result<(), String> {
    match kind {
        FieldKind::Text {
            min_length,
            max_length,
            format,
        } => {
            let s = v.as_str().ok_or("must be text")?;
            let len = s.chars().count() as u64;
            if min_length.is_some_and(|m| len < m) {
                return Err(format!(
                    "must be at least {} characters",
                    min_length.unwrap_or(0)
                ));
            }
            if max_length.is_some_and(|m| len > m) {
                return Err(format!(
                    "must be at most {} characters",
                    max_length.unwrap_or(0)
                ));
            }
            match format {
                Some(f) if !has_format(*f, s) => Err(format!("must be {}", format_name(*f))),
                _ => Ok(()),
            }
        }
        FieldKind::Number {
            integer,
            minimum,
            maximum,
        } => {
            let n = v.as_f64().ok_or("must be a number")?;
            if *integer && !(v.is_i64() || v.is_u64()) {
                return Err("must be a whole number".into());
            }
            if minimum.is_some_and(|m| n < m) {
                return Err(format!("must be at least {}", minimum.unwrap_or(0.0)));
            }
            if maximum.is_some_and(|m| n > m) {
                return Err(format!("must be at most {}", maximum.unwrap_or(0.0)));
            }
            Ok(())
        }
        FieldKind::Boolean => v
            .as_bool()
            .map(|_| ())
            .ok_or_else(|| "must be true or false".into()),
        FieldKind::Choice(options) => {
            let s = v.as_str().ok_or("must be one of the options")?;
            if options.iter().any(|o| o.value == s) {
                Ok(())
            } else {
                Err(format!("`{s}` is not one of the options"))
            }
        }
        FieldKind::MultiChoice {
            options,
            min_items,
            max_items,
        } => {
            let picked = v.as_array().ok_or("must be a list of options")?;
            for p in picked {
                let s = p.as_str().ok_or("must be a list of options")?;
                if !options.iter().any(|o| o.value == s) {
                    return Err(format!("`{s}` is not one of the options"));
                }
            }
            let n = picked.len() as u64;
            if min_items.is_some_and(|m| n < m) {
                return Err(format!("pick at least {}", min_items.unwrap_or(0)));
            }
            if max_items.is_some_and(|m| n > m) {
                return Err(format!("pick at most {}", max_items.unwrap_or(0)));
            }
            Ok(())
        }
    }
}

fn format_name(f: StringFormat) -> &'static str {
    match f {
        StringFormat::Email => "an email address",
        StringFormat::Uri => "a URI",
        StringFormat::Date => "a date (YYYY-MM-DD)",
        StringFormat::DateTime => "a date and time (RFC 3339)",
    }
}

fn has_format(f: StringFormat, s: &str) -> bool {
    match f {
        StringFormat::Email => s.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && domain.contains('.') && !s.contains(char::is_whitespace)
        }),
        StringFormat::Uri => s.split_once(':').is_some_and(|(scheme, _)| {
            scheme
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
        }),
        StringFormat::Date => is_date(s),
        StringFormat::DateTime => s
            .split_once(['T', 't'])
            .is_some_and(|(date, time)| is_date(date) && is_time(time)),
    }
}

fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
}

fn is_date(s: &str) -> bool {
    let mut parts = s.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// `HH:MM:SS[.frac](Z|±HH:MM)`.
fn is_time(s: &str) -> bool {
    let (clock, zone) = match s.find(['Z', 'z', '+', '-']) {
        Some(i) => s.split_at(i),
        None => return false,
    };
    let clock = clock.split_once('.').map_or(clock, |(c, frac)| {
        if !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit()) {
            c
        } else {
            ""
        }
    });
    let hms: Vec<&str> = clock.split(':').collect();
    let ok_clock = hms.len() == 3
        && digits(hms[0], 2).is_some_and(|h| h < 24)
        && digits(hms[1], 2).is_some_and(|m| m < 60)
        && digits(hms[2], 2).is_some_and(|s| s < 61);
    let ok_zone = matches!(zone, "Z" | "z")
        || (zone.len() == 6
            && digits(&zone[1..3], 2).is_some_and(|h| h < 24)
            && &zone[3..4] == ":"
            && digits(&zone[4..6], 2).is_some_and(|m| m < 60));
    ok_clock && ok_zone
}

#[cfg(test)]
mod tests;
