//! What every store must do, for each store's tests.

use toolgate_store::Store;

/// Objects written whole (the second write of a name replaces the first), read back, listed by
/// prefix, deleted (twice: the second is no error), and a name that could leave the store
/// refused.
pub(crate) fn behaves_as_a_store(store: &dyn Store) {
    store.put("job_status/a", b"first").unwrap();
    store.put("job_status/a", b"second").unwrap();
    let used = store.put("review_status/b", b"x").unwrap();
    assert_eq!(store.get("job_status/a").unwrap().unwrap(), b"second");
    assert_eq!(store.get("job_status/none").unwrap(), None);
    // Several read at once come back in the order asked, one missing, one a refused name.
    let read: Vec<Option<Vec<u8>>> = store
        .get_all(&["review_status/b", "job_status/none", "job_status/a", "../x"])
        .into_iter()
        .map(|read| read.unwrap_or(Some(b"refused".to_vec())))
        .collect();
    assert_eq!(
        read,
        [
            Some(b"x".to_vec()),
            None,
            Some(b"second".to_vec()),
            Some(b"refused".to_vec())
        ]
    );
    let names: Vec<String> = store
        .list("")
        .unwrap()
        .into_iter()
        .map(|entry| entry.name)
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    // A one-byte object takes its overhead at least, and the listing counts it as the write
    // did.
    let listed = store.list("review_status/").unwrap();
    assert_eq!((listed.len(), listed[0].size), (1, used));
    assert!(used > toolgate_store::OBJECT_OVERHEAD, "{used}");
    store.delete("job_status/a").unwrap();
    store.delete("job_status/a").unwrap();
    assert_eq!(store.get("job_status/a").unwrap(), None);
    assert!(store.put("../escape/x", b"no").is_err());
}
