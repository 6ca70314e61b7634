package automations

import (
	"context"
	"fmt"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"

	"mailroom/internal/templates"
)

// maxName is the longest name a definition takes (spec.go's check).
const maxName = 200

// Duplicate copies an automation at its current version as a new one named
// "<name> (copy)", disabled, with a signing secret of its own (the Resend
// SDKs' automations.duplicate). Only the YAML's name changes.
func (s *Service) Duplicate(ctx context.Context, workspaceID, ref string) (Automation, error) {
	a, err := s.Get(ctx, workspaceID, ref)
	if err != nil {
		return a, err
	}
	src, err := renamed([]byte(a.YAML), templates.CopyName(a.Name, maxName))
	if err != nil {
		return Automation{}, err
	}
	return s.CreateEnabled(ctx, workspaceID, src, false)
}

// renamed is the definition with its top-level name replaced; the rest of
// the document is printed back from its syntax tree, comments included.
func renamed(src []byte, name string) ([]byte, error) {
	file, err := parser.ParseBytes(src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("automations: re-reading a stored definition: %w", err)
	}
	node, err := yaml.ValueToNode(name)
	if err != nil {
		return nil, err
	}
	p, err := yaml.PathString("$.name")
	if err != nil {
		return nil, err
	}
	if err := p.ReplaceWithNode(file, node); err != nil {
		return nil, fmt.Errorf("automations: renaming a stored definition: %w", err)
	}
	return []byte(file.String()), nil
}
