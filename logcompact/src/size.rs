//! Numbers as people write them, checked before they cost anything: byte sizes (`4096`, `64KiB`, `1.5GiB`,
//! `2TiB`; `K`, `KB`, `M`, ... are powers of 1024 too), counts (`1M`, `1e6`) and fractions. The command line
//! and the settings files read numbers with these.

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

/// Parses a count (of records, keys, an offset): a whole number, with an optional decimal suffix (`k` 10^3,
/// `M` 10^6, `G` 10^9, `T` 10^12) or in scientific notation (`1e6`, `2.5e6`), as long as it is a whole number.
///
/// # Errors
/// A message naming the bad text.
pub fn parse_count(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let bad = || format!("{text:?} is not a count (e.g. 1000000, 1M, 2.5k, 1e6)");
    if t.starts_with('-') {
        return Err(format!("{text:?} is negative: a count must be at least 0"));
    }
    if let Ok(n) = t.parse::<u64>() {
        return Ok(n);
    }
    let (number, scale) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() && !t[..i].contains(['e', 'E']) => {
            let scale: u32 = match c {
                'k' | 'K' => 3,
                'm' | 'M' => 6,
                'g' | 'G' => 9,
                't' | 'T' => 12,
                _ => return Err(bad()),
            };
            (&t[..i], scale)
        }
        _ => (t, 0),
    };
    // Exact decimal arithmetic on the digits: mantissa, fraction and exponent.
    let (mantissa, exponent) = match number.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().map_err(|_| bad())?),
        None => (number, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let digits = format!("{whole}{fraction}");
    let shift = exponent + scale as i32 - fraction.len() as i32;
    let too_large = || format!("{text:?} is too large (at most 2^64 - 1)");
    let mut value: u128 = digits.trim_start_matches('0').parse::<u128>().unwrap_or(0);
    if digits.len() > 38 {
        return Err(too_large());
    }
    if shift >= 0 {
        for _ in 0..shift {
            value = value.checked_mul(10).ok_or_else(too_large)?;
        }
    } else {
        let div = 10u128.checked_pow(shift.unsigned_abs()).ok_or_else(bad)?;
        if !value.is_multiple_of(div) {
            return Err(format!("{text:?} is not a whole number"));
        }
        value /= div;
    }
    u64::try_from(value).map_err(|_| too_large())
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
    fn counts() {
        for (text, want) in [
            ("0", 0),
            ("1000", 1000),
            ("1M", 1_000_000),
            ("2.5k", 2500),
            ("1e6", 1_000_000),
            ("2.5e6", 2_500_000),
            ("1.5G", 1_500_000_000),
            ("18446744073709551615", u64::MAX),
        ] {
            assert_eq!(parse_count(text), Ok(want), "{text}");
        }
        for bad in ["", "-1", "1.5", "1e-1", "1x", "M", "1e", "18446744073709551616", "1e30"] {
            assert!(parse_count(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fractions() {
        assert_eq!(parse_fraction("0.25"), Ok(0.25));
        for bad in ["-0.1", "1.5", "x", "NaN"] {
            assert!(parse_fraction(bad).is_err(), "{bad}");
        }
    }
}
