//! Percentiles and medians of measured samples.

use std::time::Duration;

/// The `q`-quantile (0.0..=1.0) of `samples` by nearest rank, in microseconds;
/// `None` when there are no samples.
pub fn percentile_us(samples: &[Duration], q: f64) -> Option<f64> {
    let mut sorted: Vec<Duration> = samples.to_vec();
    sorted.sort_unstable();
    let last = sorted.len().checked_sub(1)?;
    let rank = ((q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize).saturating_sub(1);
    Some(sorted[rank.min(last)].as_secs_f64() * 1e6)
}

/// The median of `values` (the mean of the middle two for an even count);
/// `None` when empty. NaNs are ignored.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_uses_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentile_us(&samples, 0.5), Some(50.0));
        assert_eq!(percentile_us(&samples, 0.99), Some(99.0));
        assert_eq!(percentile_us(&samples, 1.0), Some(100.0));
        assert_eq!(percentile_us(&[], 0.5), None);
    }

    #[test]
    fn median_of_even_count_is_mean_of_middle_pair() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN]), None);
    }
}
