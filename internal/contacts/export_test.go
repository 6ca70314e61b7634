package contacts

// OnImportRead makes Import call f after it has read which of its
// addresses the workspace already has, before it writes anything.
func (s *Service) OnImportRead(f func()) { s.hooks.importRead = f }
