package domains

// OnDeleteCounted makes Delete call f between counting the domain's
// mailboxes (none) and deleting it, inside its transaction: a test holds
// Delete there to create a mailbox in the gap.
func (s *Service) OnDeleteCounted(f func()) { s.hooks.deleteCounted = f }

// TrackingHostFor is how long a tracking host is remembered.
const TrackingHostFor = trackingHostFor
