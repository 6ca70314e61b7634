// Package delivery turns queued emails into SMTP transactions and their
// outcomes into events. Filled in by the delivery-engine work.
package delivery
