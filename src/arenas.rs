//! How many arenas glibc's allocator keeps. It gives a thread that allocates while the others
//! hold theirs an arena of its own, up to eight a core, and memory freed into an arena stays
//! with it. A batch load hands its rows from the threads that read and evaluate them to the
//! one that writes them, so every arena grows to its own high-water mark; two arenas keep a
//! large file's peak memory well below glibc's default for a small part of the load's time
//! (figures in `docs/performance.md`).

/// Arenas the service keeps unless the operator says otherwise.
pub const ARENAS: usize = 2;

/// Limits glibc's allocator to `ARENAS` arenas, unless `MALLOC_ARENA_MAX` or `GLIBC_TUNABLES`
/// already set a limit (glibc read those at start-up). To be called first thing in `main`,
/// before any thread starts: a thread keeps the arena it was given. True when it set the limit.
pub fn limit() -> bool {
    limit_unless_set(|name| std::env::var(name).ok())
}

/// `limit`, reading the environment through `var`.
fn limit_unless_set(var: impl Fn(&str) -> Option<String>) -> bool {
    let set = var("MALLOC_ARENA_MAX").is_some()
        || var("GLIBC_TUNABLES").is_some_and(|t| t.contains("glibc.malloc.arena_max"));
    !set && set_arena_max()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn set_arena_max() -> bool {
    // SAFETY: `mallopt` takes two integers and touches nothing of ours; glibc serialises it with
    // its own lock, and the limit applies to the arenas it makes after it.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, ARENAS as libc::c_int) == 1 }
}

/// Other allocators make no arena per thread.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_arena_max() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An environment of `pairs`.
    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            let found = pairs.iter().find(|(n, _)| *n == name);
            found.map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn an_operators_limit_is_left_as_it_is() {
        assert!(!limit_unless_set(env(&[("MALLOC_ARENA_MAX", "8")])));
        let tunables = [(
            "GLIBC_TUNABLES",
            "glibc.malloc.arena_max=4:glibc.malloc.tcache_count=0",
        )];
        assert!(!limit_unless_set(env(&tunables)));
        let others = [("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0")];
        let glibc = cfg!(all(target_os = "linux", target_env = "gnu"));
        assert_eq!(limit_unless_set(env(&others)), glibc);
        assert_eq!(limit_unless_set(env(&[])), glibc);
    }
}
