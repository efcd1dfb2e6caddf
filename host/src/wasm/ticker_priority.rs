//! How promptly the machine runs the epoch ticker's thread when its sleep ends. Every call's
//! deadline and every isolated caller's alarm passes only when that thread runs, so on a
//! machine whose cores are busy its wake-up latency is theirs: on two saturated cores it woke
//! 3.9 ms late at p99 with the usual priority, 2.1 ms with the shortest slice and 40 µs as the
//! lowest real-time priority (docs/performance.md "Policy isolation"). The thread runs for
//! microseconds per tick, so it takes little from anything it preempts.
//!
//! Linux only; elsewhere the ticker keeps the usual priority.

use super::settings::TickerPriority;

impl TickerPriority {
    /// Gives the thread `tid` this priority or the best below it permitted, and says which it
    /// got.
    #[cfg(target_os = "linux")]
    pub(super) fn apply(self, tid: libc::pid_t) -> TickerPriority {
        let fifo = |priority: u32| {
            let mut attr = sched_attr(libc::SCHED_FIFO);
            attr.sched_priority = priority;
            attr
        };
        let slice = |nanos: u64| {
            let mut attr = sched_attr(libc::SCHED_OTHER);
            attr.sched_runtime = nanos;
            attr
        };
        if self == TickerPriority::Realtime && set(tid, &fifo(1)) {
            return TickerPriority::Realtime;
        }
        // From a real-time priority, or a short slice, back to the usual one first.
        let _ = set(tid, &slice(0));
        if self != TickerPriority::Normal && set(tid, &slice(SHORTEST_SLICE_NS)) {
            // Kernels before 6.12 accept the slice and ignore it: read it back.
            if get(tid).is_some_and(|attr| attr.sched_runtime == SHORTEST_SLICE_NS) {
                return TickerPriority::ShortSlice;
            }
            let _ = set(tid, &slice(0));
        }
        TickerPriority::Normal
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn apply(self, _thread: ()) -> TickerPriority {
        TickerPriority::Normal
    }
}

/// EEVDF's shortest custom slice, in nanoseconds.
#[cfg(target_os = "linux")]
const SHORTEST_SLICE_NS: u64 = 100_000;

/// Scheduling attributes for `policy` at nice 0 (the ticker's own), not inherited by children.
#[cfg(target_os = "linux")]
fn sched_attr(policy: libc::c_int) -> libc::sched_attr {
    libc::sched_attr {
        size: SCHED_ATTR_SIZE,
        sched_policy: policy as u32,
        sched_flags: libc::SCHED_FLAG_RESET_ON_FORK as u64,
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: 0,
        sched_deadline: 0,
        sched_period: 0,
    }
}

/// The size of the attributes passed (the kernel's first version of the structure).
#[cfg(target_os = "linux")]
const SCHED_ATTR_SIZE: u32 = std::mem::size_of::<libc::sched_attr>() as u32;

/// Sets `tid`'s scheduling; whether it was permitted.
#[cfg(target_os = "linux")]
fn set(tid: libc::pid_t, attr: &libc::sched_attr) -> bool {
    // SAFETY: `attr` is a valid, initialised `sched_attr` of the size it declares, read by the
    // kernel only; a `tid` that is not a thread of ours is refused with an error.
    unsafe { libc::syscall(libc::SYS_sched_setattr, tid, attr, 0) == 0 }
}

/// `tid`'s scheduling, if it can be read.
#[cfg(target_os = "linux")]
fn get(tid: libc::pid_t) -> Option<libc::sched_attr> {
    let mut attr = sched_attr(libc::SCHED_OTHER);
    // SAFETY: `attr` is a valid, writable `sched_attr` of `SCHED_ATTR_SIZE` bytes, the size
    // passed, which the kernel writes at most.
    let done = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut attr as *mut libc::sched_attr,
            SCHED_ATTR_SIZE,
            0,
        )
    };
    (done == 0).then_some(attr)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Runs `f` on a thread of its own with its id (the thread's scheduling is its own).
    fn on_a_thread<T: Send + 'static>(f: impl FnOnce(libc::pid_t) -> T + Send + 'static) -> T {
        std::thread::spawn(move || f(unsafe { libc::gettid() }))
            .join()
            .unwrap()
    }

    #[test]
    fn normal_leaves_the_thread_as_the_others() {
        let (got, attr) = on_a_thread(|tid| (TickerPriority::Normal.apply(tid), get(tid)));
        assert_eq!(got, TickerPriority::Normal);
        let attr = attr.unwrap();
        assert_eq!(attr.sched_policy, libc::SCHED_OTHER as u32);
        assert_eq!(attr.sched_priority, 0);
    }

    #[test]
    fn what_was_obtained_is_what_the_kernel_reports() {
        // Whichever this machine permits, the answer matches the thread's scheduling.
        for wanted in [TickerPriority::ShortSlice, TickerPriority::Realtime] {
            let (got, attr) = on_a_thread(move |tid| (wanted.apply(tid), get(tid).unwrap()));
            match got {
                TickerPriority::Realtime => {
                    assert_eq!(wanted, TickerPriority::Realtime);
                    assert_eq!(attr.sched_policy, libc::SCHED_FIFO as u32);
                    assert_eq!(attr.sched_priority, 1);
                }
                TickerPriority::ShortSlice => {
                    assert_eq!(attr.sched_policy, libc::SCHED_OTHER as u32);
                    assert_eq!(attr.sched_runtime, SHORTEST_SLICE_NS);
                }
                TickerPriority::Normal => {
                    assert_eq!(attr.sched_policy, libc::SCHED_OTHER as u32);
                }
            }
        }
    }

    /// Drops `CAP_SYS_NICE` from the calling thread's effective capabilities (a thread's
    /// capabilities are its own); whether it had it.
    fn drop_cap_sys_nice() -> bool {
        const VERSION_3: u32 = 0x2008_0522;
        const CAP_SYS_NICE: u32 = 23;
        #[repr(C)]
        struct Header {
            version: u32,
            pid: libc::c_int,
        }
        #[repr(C)]
        #[derive(Clone, Copy, Default)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        let mut header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let mut data = [Data::default(); 2];
        // SAFETY: a version-3 header and its two data words, as capget/capset expect.
        unsafe {
            assert_eq!(libc::syscall(libc::SYS_capget, &mut header, &mut data), 0);
            let had = data[0].effective & (1 << CAP_SYS_NICE) != 0;
            data[0].effective &= !(1 << CAP_SYS_NICE);
            assert_eq!(libc::syscall(libc::SYS_capset, &mut header, &data), 0);
            had
        }
    }

    #[test]
    fn without_the_permission_realtime_falls_back_to_what_any_user_may_have() {
        let (got, attr, rtprio) = on_a_thread(|tid| {
            drop_cap_sys_nice();
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: `limit` is a valid place for the limit.
            unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut limit) };
            (
                TickerPriority::Realtime.apply(tid),
                get(tid).unwrap(),
                limit.rlim_cur,
            )
        });
        if rtprio > 0 {
            // This process may take real-time priorities without the capability.
            assert_eq!(got, TickerPriority::Realtime);
            return;
        }
        assert_ne!(got, TickerPriority::Realtime);
        assert_eq!(attr.sched_policy, libc::SCHED_OTHER as u32);
        // A short slice where the kernel has them (6.12 and later), as any user may ask.
        assert_eq!(
            got == TickerPriority::ShortSlice,
            attr.sched_runtime == SHORTEST_SLICE_NS
        );
    }

    #[test]
    fn a_lower_priority_undoes_a_higher_one() {
        let (first, then, attr) = on_a_thread(|tid| {
            let first = TickerPriority::Realtime.apply(tid);
            (first, TickerPriority::Normal.apply(tid), get(tid).unwrap())
        });
        assert_eq!(then, TickerPriority::Normal, "after {first:?}");
        assert_eq!(attr.sched_policy, libc::SCHED_OTHER as u32);
        assert_ne!(attr.sched_runtime, SHORTEST_SLICE_NS);
    }
}
