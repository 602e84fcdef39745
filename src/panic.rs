//! A caught panic, in words: what the threads and callbacks that catch one report.

use std::any::Any;

/// The message a panic was raised with (`panic!("...")` gives a `&str` or a `String`), or
/// `fallback` for any other payload.
pub(crate) fn message(payload: &(dyn Any + Send), fallback: &str) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| fallback.to_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_message_of_either_kind_of_panic() {
        let caught = |f: fn()| std::panic::catch_unwind(f).unwrap_err();
        assert_eq!(super::message(&*caught(|| panic!("plain")), "?"), "plain");
        assert_eq!(super::message(&*caught(|| panic!("{}", 42)), "?"), "42");
        assert_eq!(
            super::message(&*caught(|| std::panic::panic_any(7_u8)), "?"),
            "?"
        );
    }
}
