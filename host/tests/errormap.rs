//! Spec: the KV error map (reference 004): parsing, per-node storage, retry specifications.

use crate::common;

use std::time::Duration;

use rebound::errormap::{Attribute, ErrorMap, ErrorMapError, ErrorMapStore, Offer, SpecStrategy};

fn read(name: &str) -> String {
    std::fs::read_to_string(common::error_map_path(name)).unwrap()
}

/// Reference 004 "Parsing the Error Map": every real map (v1 and v2) parses and keeps every
/// entry, with the version and revision it declares.
#[test]
fn every_real_map_parses_with_all_entries() {
    let maps = [
        ("error_map_v1.json", 1, 4, 61),
        ("error_map_v2.json", 2, 9, 83),
        ("gocbcore_testdata_err_map70_v1.json", 1, 2, 58),
        ("gocbcore_testdata_err_map71_v2.json", 2, 1, 65),
        ("couchbasemock_errmap_v1.json", 1, 1, 49),
    ];
    for (name, version, revision, entries) in maps {
        let text = read(name);
        let map = ErrorMap::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            (map.version(), map.revision(), map.len()),
            (version, revision, entries),
            "{name}"
        );
        // Every JSON key is an entry with the same name.
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        for (key, entry) in json["errors"].as_object().unwrap() {
            let code = u16::from_str_radix(key, 16).unwrap();
            assert_eq!(
                map.get(code).unwrap().name,
                entry["name"].as_str().unwrap(),
                "{name} {key}"
            );
        }
    }
}

/// Reference 004 "Error Attributes": v2 attributes are understood; unknown ones are kept and
/// ignored.
#[test]
fn attributes_v2_and_unknown() {
    let map = ErrorMap::parse(&read("error_map_v2.json")).unwrap();
    assert!(map.get(0x35).unwrap().attrs.contains(&Attribute::NoRetry));
    assert!(map.get(0x33).unwrap().attrs.contains(&Attribute::RateLimit));
    let map = ErrorMap::parse(r#"{"version":1,"revision":1,"errors":{"1":{"name":"X","desc":"","attrs":["shiny-new","temp"]}}}"#).unwrap();
    assert_eq!(
        map.get(1).unwrap().attrs,
        vec![Attribute::Unknown("shiny-new".into()), Attribute::Temp]
    );
}

/// Reference 004 "Parsing the Error Map": a corrupt map is rejected with a clear error saying
/// where.
#[test]
fn corrupt_maps_are_rejected_with_where() {
    let cases: &[(&str, &str)] = &[
        ("{\"version\":1,", "line 1"),
        (r#"{"revision":1,"errors":{}}"#, "version"),
        (
            r#"{"version":1,"revision":1,"errors":{"zz":{"name":"X","attrs":[]}}}"#,
            "errors.zz",
        ),
        (
            r#"{"version":1,"revision":1,"errors":{"10000":{"name":"X","attrs":[]}}}"#,
            "errors.10000",
        ),
        (
            r#"{"version":1,"revision":1,"errors":{"1":{"name":"X"}}}"#,
            "attrs",
        ),
        (
            r#"{"version":1,"revision":1,"errors":{"7ff0":{"name":"X","attrs":[],"retry":{"strategy":"constant","after":1}}}}"#,
            "errors.7ff0.retry",
        ),
        (
            r#"{"version":1,"revision":1,"errors":{"7ff0":{"name":"X","attrs":[],"retry":{"strategy":"fibonacci","after":1,"interval":1}}}}"#,
            "errors.7ff0.retry.strategy",
        ),
        (
            r#"{"version":1,"revision":1,"errors":{"7ff0":{"name":"X","attrs":[],"retry":{"strategy":"linear","after":1,"interval":1,"ceil":0}}}}"#,
            "ceil",
        ),
        (r#"{"version":3,"revision":1,"errors":{}}"#, "version 3"),
    ];
    for (json, expected) in cases {
        let err = ErrorMap::parse(json).unwrap_err();
        assert!(err.to_string().contains(expected), "{json}: {err}");
    }
    assert!(matches!(
        ErrorMap::parse("[]").unwrap_err(),
        ErrorMapError::Invalid { .. }
    ));
}

/// Reference 004 "Control Flow": maps are per node; the highest revision wins; a corrupt map
/// leaves the previous one in place.
#[test]
fn store_is_per_node_highest_revision_wins() {
    let mut store = ErrorMapStore::new();
    let v1 = read("error_map_v1.json"); // revision 4
    let v2 = read("error_map_v2.json"); // revision 9
    assert_eq!(store.offer_json("a", &v2).unwrap(), Offer::Installed);
    assert_eq!(
        store.offer_json("a", &v1).unwrap(),
        Offer::KeptCurrent { revision: 9 }
    );
    assert_eq!(store.offer_json("b", &v1).unwrap(), Offer::Installed);
    assert_eq!(store.get("a").unwrap().revision(), 9);
    assert_eq!(store.get("b").unwrap().revision(), 4);
    assert!(store.offer_json("b", "{not json").is_err());
    assert_eq!(
        store.get("b").unwrap().revision(),
        4,
        "corrupt map keeps the previous one"
    );
    assert!(store.get("c").is_none());
}

fn ms(v: &[u64]) -> Vec<Duration> {
    v.iter().map(|m| Duration::from_millis(*m)).collect()
}

/// Reference 004 "Retry Intervals": the three schedules of the mock map — `after` first, then
/// constant `interval`, linear `interval × r`, exponential `interval ^ r`, capped at `ceil`,
/// ending at `max-duration`.
#[test]
fn retry_spec_schedules() {
    let map = ErrorMap::parse(&read("couchbasemock_errmap_v1.json")).unwrap();
    let constant = map.get(0x7ff0).unwrap().retry.unwrap();
    assert_eq!(constant.strategy, SpecStrategy::Constant);
    // after 50, then 10 each, max-duration 500: 50 + 45×10 = 500.
    let sched: Vec<_> = constant.schedule().collect();
    assert_eq!(sched.len(), 46);
    assert_eq!(sched[..3], ms(&[50, 10, 10])[..]);
    assert_eq!(sched.iter().sum::<Duration>(), Duration::from_millis(500));

    let linear = map.get(0x7ff1).unwrap().retry.unwrap();
    assert_eq!(linear.strategy, SpecStrategy::Linear);
    let ceil = Duration::from_millis(linear.ceil.unwrap());
    let first: Vec<_> = (0..4).map(|a| linear.delay(a)).collect();
    assert_eq!(
        first,
        ms(&[
            linear.after,
            linear.interval,
            2 * linear.interval,
            3 * linear.interval
        ])
    );
    assert_eq!(linear.delay(10_000), ceil);

    let exponential = map.get(0x7ff2).unwrap().retry.unwrap();
    assert_eq!(exponential.strategy, SpecStrategy::Exponential);
    let first: Vec<_> = (0..9).map(|a| exponential.delay(a)).collect();
    assert_eq!(first, ms(&[50, 2, 4, 8, 16, 32, 64, 128, 200]));
    assert_eq!(
        exponential.delay(u32::MAX),
        Duration::from_millis(200),
        "no overflow"
    );
    let total: Duration = exponential.schedule().sum();
    assert_eq!(
        total,
        Duration::from_millis(500),
        "the schedule ends at max-duration"
    );
}

/// Reference 004 "Questions": a max-duration of 0 means "follow the client behaviour".
#[test]
fn retry_spec_max_duration_zero_means_client() {
    let map = ErrorMap::parse(r#"{"version":1,"revision":1,"errors":{"7ff0":{"name":"X","attrs":["auto-retry"],"retry":{"strategy":"constant","after":1,"interval":5,"max-duration":0}}}}"#).unwrap();
    let spec = map.get(0x7ff0).unwrap().retry.unwrap();
    assert_eq!(spec.max_duration(), None);
    assert_eq!(
        spec.next_delay(3, Duration::from_secs(3600)),
        Some(Duration::from_millis(5))
    );
}
