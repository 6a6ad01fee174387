//! Members on both backends: what erasure leaves in the database itself.

use store::{NewMember, Store, backend_tests};

/// Reads the stored row itself: erasure must clear the columns, not just hide the row.
async fn deletion_clears_personal_columns(store: Store) {
    let org = store.tenancy().create_org("Acme").await.unwrap();
    let new = NewMember {
        first_name: "Ada".into(),
        last_name: Some("Lovelace".into()),
        email: Some("ada@example.com".into()),
        phone: Some("+44 20 7946 0000".into()),
        idp: "auth0".into(),
        user_id: "auth0|1".into(),
        external_id: "card-1".into(),
        meta: Some(serde_json::json!({"dob": "1815-12-10"})),
        ..Default::default()
    };
    let member = store
        .members()
        .create_member(&org.scope(), new)
        .await
        .unwrap();
    store
        .members()
        .delete_member(&org.scope(), &member.id)
        .await
        .unwrap();
    // Each personal column, by name, with whether it still holds anything.
    const PERSONAL: [&str; 9] = [
        "first_name",
        "last_name",
        "email",
        "phone",
        "idp",
        "user_id",
        "external_id",
        "meta",
        "communication_preferences",
    ];
    let (id, status): (String, String) = store
        .read_row(
            "SELECT id, status FROM members WHERE id = $1",
            seam::params![member.id],
        )
        .await
        .unwrap()
        .expect("the row stays for the ledger");
    assert_eq!(id, member.id, "the row stays for the ledger");
    assert_eq!(status, "inactive");
    let mut kept = Vec::new();
    for column in PERSONAL {
        let sql = format!(
            "SELECT CAST(COUNT(*) AS BIGINT) FROM members WHERE id = $1 AND {column} IS NOT NULL"
        );
        let (count,): (i64,) = store
            .read_row(&sql, seam::params![member.id])
            .await
            .unwrap()
            .unwrap();
        if count > 0 {
            kept.push(column);
        }
    }
    assert!(kept.is_empty(), "personal columns kept: {kept:?}");
}

backend_tests!(deletion_clears_personal_columns);
