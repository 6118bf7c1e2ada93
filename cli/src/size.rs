//! Numbers on the command line, checked before they cost anything: byte sizes (`4096`, `64KiB`, `1.5GiB`,
//! `2TiB`; `K`, `KB`, `M`, ... are powers of 1024 too) and fractions.

/// Parses a byte size: a non-negative number, decimals allowed, with an optional binary unit.
///
/// # Errors
/// A message naming the bad text.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("{text:?} is negative: a size must be at least 0"));
    }
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let bad = || format!("{text:?} is not a byte size (e.g. 4096, 64KiB, 1.5GiB, 2TiB)");
    if number.is_empty() || number.starts_with('.') || number.ends_with('.') || number.matches('.').count() > 1 {
        return Err(bad());
    }
    let shift: u32 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("unknown unit in {text:?} (use B, KiB, MiB, GiB or TiB)")),
    };
    let too_large = || format!("{text:?} is too large (at most 2^64 - 1 bytes)");
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let whole: u64 = whole.parse().map_err(|_| too_large())?;
    let mut bytes = whole.checked_mul(1u64 << shift).ok_or_else(too_large)?;
    if !fraction.is_empty() {
        // Exact decimal arithmetic: fraction digits / 10^n of the unit, rounded down to whole bytes.
        let digits = fraction.get(..fraction.len().min(18)).unwrap_or(fraction);
        let numerator: u128 = digits.parse().map_err(|_| bad())?;
        let denominator = 10u128.pow(digits.len() as u32);
        let part = numerator * (1u128 << shift) / denominator;
        bytes = bytes.checked_add(u64::try_from(part).map_err(|_| too_large())?).ok_or_else(too_large)?;
    }
    Ok(bytes)
}

/// Parses a fraction in `[0, 1]` (a share of appends, say).
///
/// # Errors
/// A message naming the bad text.
pub fn parse_fraction(text: &str) -> Result<f64, String> {
    let v: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not a number"))?;
    if (0.0..=1.0).contains(&v) { Ok(v) } else { Err(format!("{text} is not in [0, 1]")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("64KiB"), Ok(65536));
        assert_eq!(parse_bytes("128MiB"), Ok(128 << 20));
        assert_eq!(parse_bytes("1g"), Ok(1 << 30));
        assert_eq!(parse_bytes("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_bytes("2TiB"), Ok(2 << 40));
        assert_eq!(parse_bytes("0.5KiB"), Ok(512));
        assert_eq!(parse_bytes("16EiB").map_err(|e| e.contains("unit")), Err(true));
        assert_eq!(parse_bytes("16777216TiB").map_err(|e| e.contains("too large")), Err(true));
        for bad in ["12X", "", "-1", "-1KiB", "1..5MiB", ".5MiB", "5.MiB", "MiB", "1,5MiB"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
        assert!(parse_bytes("-1").is_err_and(|e| e.contains("negative")));
    }

    #[test]
    fn fractions() {
        assert_eq!(parse_fraction("0.25"), Ok(0.25));
        for bad in ["-0.1", "1.5", "x", "NaN"] {
            assert!(parse_fraction(bad).is_err(), "{bad}");
        }
    }
}
