//! Number and size formatting for trend sentences. The forms are part of
//! the sentences' contract: change them only with the rules that match them.

/// Bytes per binary size unit.
pub(crate) const KIB: f64 = 1024.0;
pub(crate) const MIB: f64 = 1024.0 * KIB;
pub(crate) const GIB: f64 = 1024.0 * MIB;
pub(crate) const TIB: f64 = 1024.0 * GIB;

/// A metric value: `nan`, `inf`, `-inf`; integers without a point
/// (`32768`); the shortest exact decimal for ordinary magnitudes
/// (`245.75`, `0.001`); scientific form below 1e-4 or from 1e15
/// (`1.4013e-45`).
pub(crate) fn value(v: f64) -> String {
    if v.is_nan() {
        return "nan".to_owned();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let magnitude = v.abs();
    if v == 0.0 {
        "0".to_owned()
    } else if !(1e-4..1e15).contains(&magnitude) {
        format!("{v:e}")
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// The kind of a value as sentences name it: `nan`, `inf`, `-inf`, or
/// `finite`.
pub(crate) fn value_kind(v: f64) -> &'static str {
    if v.is_nan() {
        "nan"
    } else if v == f64::INFINITY {
        "inf"
    } else if v == f64::NEG_INFINITY {
        "-inf"
    } else {
        "finite"
    }
}

/// An amount of memory with one decimal: KiB below 1 MiB, GiB from
/// 100 000 MiB, MiB otherwise (`289.0 MiB`, `16.0 MiB`, `120.5 GiB`).
pub(crate) fn size(bytes: f64) -> String {
    let magnitude = bytes.abs();
    if magnitude >= 100_000.0 * MIB {
        format!("{:.1} GiB", bytes / GIB)
    } else if magnitude >= MIB || magnitude == 0.0 {
        format!("{:.1} MiB", bytes / MIB)
    } else {
        format!("{:.1} KiB", bytes / KIB)
    }
}

/// A memory limit in GiB with one decimal (`80.0 GiB`).
pub(crate) fn gib(bytes: f64) -> String {
    format!("{:.1} GiB", bytes / GIB)
}

/// A rate with one decimal (`1019.6`).
pub(crate) fn rate(v: f64) -> String {
    format!("{v:.1}")
}

/// A duration in seconds: three decimals from 0.01 s (`0.268`, `1.234`),
/// six below (`0.000412`).
pub(crate) fn seconds(v: f64) -> String {
    if v >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.6}")
    }
}

/// A percentage, rounded to a whole number (`0`, `97`).
pub(crate) fn percent(v: f64) -> String {
    format!("{v:.0}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(value(f64::NAN), "nan");
        assert_eq!(value(f64::INFINITY), "inf");
        assert_eq!(value(f64::NEG_INFINITY), "-inf");
        assert_eq!(value(0.0), "0");
        assert_eq!(value(32768.0), "32768");
        assert_eq!(value(245.75), "245.75");
        assert_eq!(value(1.0e-3), "0.001");
        assert_eq!(value(1.4013e-45), "1.4013e-45");
        assert_eq!(value(-2.5), "-2.5");
    }

    #[test]
    fn sizes() {
        assert_eq!(size(289.0 * MIB), "289.0 MiB");
        assert_eq!(size(6945.0 * MIB), "6945.0 MiB");
        assert_eq!(size(512.0 * KIB), "512.0 KiB");
        assert_eq!(size(200.0 * GIB), "200.0 GiB");
        assert_eq!(gib(80.0 * GIB), "80.0 GiB");
        assert_eq!(rate(1019.6), "1019.6");
        assert_eq!(seconds(0.268), "0.268");
        assert_eq!(seconds(1.2345), "1.234");
        assert_eq!(seconds(0.000412), "0.000412");
        assert_eq!(percent(0.2), "0");
        assert_eq!(percent(96.6), "97");
    }
}
