package broadcasts

// PendingBatchSQL is the fan-out's read of its next batch, for the plan test.
const PendingBatchSQL = pendingBatchSQL
