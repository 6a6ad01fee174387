//! Batch-file mappings: per organisation and file-name pattern, a document saying how a client's
//! columns become earns. The store keeps the documents; `ingest::batch::mapping` validates and applies
//! them.

use crate::OrgScope;
use crate::{Batches, StoreError};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

/// A stored mapping.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMapping {
    /// File-name glob; `*` applies to every file.
    pub pattern: String,
    pub document: Value,
    pub updated_at: DateTime<Utc>,
}

/// Mappings: how an organisation's batch files name their columns (scope: `OrgScope`).
impl Batches {
    /// Stores (or replaces) the organisation's mapping for `pattern`.
    #[tracing::instrument(skip_all)]
    pub async fn set_mapping(
        &self,
        org: &OrgScope,
        pattern: &str,
        document: &Value,
    ) -> Result<StoredMapping, StoreError> {
        let org_id = org.id();
        self.tenancy().get_org(org_id).await?;
        const SQL: &str = "INSERT INTO mappings (org_id, pattern, document, updated_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (org_id, pattern) \
             DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at";
        let at = self.now();
        self.execute(SQL, params![org_id, pattern, document, at])
            .await?;
        Ok(StoredMapping {
            pattern: pattern.to_string(),
            document: document.clone(),
            updated_at: at,
        })
    }

    /// The organisation's mappings, by pattern.
    #[tracing::instrument(skip_all)]
    pub async fn mappings(&self, org: &OrgScope) -> Result<Vec<StoredMapping>, StoreError> {
        let org_id = org.id();
        const SQL: &str = "SELECT pattern, document, updated_at FROM mappings WHERE org_id = $1 \
             ORDER BY pattern";
        let rows: Vec<(String, Json<Value>, DateTime<Utc>)> =
            self.read_rows(SQL, params![org_id]).await?;
        Ok(rows
            .into_iter()
            .map(|(pattern, Json(document), updated_at)| StoredMapping {
                pattern,
                document,
                updated_at,
            })
            .collect())
    }

    /// Removes the organisation's mapping for `pattern`.
    #[tracing::instrument(skip_all)]
    pub async fn remove_mapping(&self, org: &OrgScope, pattern: &str) -> Result<(), StoreError> {
        let org_id = org.id();
        const SQL: &str = "DELETE FROM mappings WHERE org_id = $1 AND pattern = $2";
        let removed = self.execute(SQL, params![org_id, pattern]).await?;
        if removed == 0 {
            return Err(StoreError::NotFound { what: "mapping" });
        }
        Ok(())
    }
}
