package events

import (
	"sync"

	"mailroom/internal/mailmetrics"
	"mailroom/internal/store"
)

// meters maps a database to the process's mail counters (CountInto). Keyed
// by database rather than global, so two servers in one test process each
// count their own mail.
var meters sync.Map // *store.DB -> *mailmetrics.Meter

// CountInto makes every event raised on db move m's counters once its
// transaction commits. app calls it once while wiring.
func CountInto(db *store.DB, m *mailmetrics.Meter) { meters.Store(db, m) }

// meterEvent counts ev on the database's meter after tx commits.
func meterEvent(tx *store.Tx, ev Event) {
	v, ok := meters.Load(tx.DB())
	if !ok {
		return
	}
	m := v.(*mailmetrics.Meter)
	var count func()
	switch ev.Type {
	case EmailReceived, EmailFiltered:
		filtered := ev.Type == EmailFiltered
		count = func() { m.Received(filtered) }
	case EmailSent, EmailDelivered, EmailComplained, EmailDeferred, EmailBounced:
		n, ok := recipientsOf(&ev)
		if !ok {
			return
		}
		lane := ev.MailClass
		switch ev.Type {
		case EmailBounced:
			typ, _ := ev.Data["bounce_type"].(string)
			count = func() { m.Bounce(lane, typ, int(n)) }
		case EmailSent:
			count = func() { m.Email(mailmetrics.Sent, lane, int(n)) }
		case EmailDelivered:
			count = func() { m.Email(mailmetrics.Delivered, lane, int(n)) }
		case EmailComplained:
			count = func() { m.Email(mailmetrics.Complained, lane, int(n)) }
		case EmailDeferred:
			count = func() { m.Email(mailmetrics.Deferred, lane, int(n)) }
		}
	default:
		return
	}
	tx.AfterCommit(count)
}
