//! Durations and counts as people write them ("235 ms", "1.5 s", "1 tool"),
//! for the lines mcpvisor shows: events, errors, the CLI.

use std::time::Duration;

/// `d` rounded the way a person reads it: "235 ms", "1.5 s", "3 min 5 s".
pub fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        0..=999 => format!("{ms} ms"),
        1000..=59_999 => {
            let tenths = (ms + 50) / 100;
            if tenths % 10 == 0 {
                format!("{} s", tenths / 10)
            } else {
                format!("{}.{} s", tenths / 10, tenths % 10)
            }
        }
        _ => format!("{} min {} s", d.as_secs() / 60, d.as_secs() % 60),
    }
}

/// `n noun` with the plural people use: "1 tool", "3 tools".
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_people_write_them() {
        assert_eq!(duration(Duration::from_micros(230_565)), "230 ms");
        assert_eq!(duration(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(duration(Duration::from_secs(30)), "30 s");
        assert_eq!(duration(Duration::from_secs(185)), "3 min 5 s");
        assert_eq!(count(1, "tool"), "1 tool");
        assert_eq!(count(0, "tool"), "0 tools");
    }
}
