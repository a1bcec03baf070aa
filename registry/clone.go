package registry

import (
	"bytes"
	"maps"
	"slices"
)

// Clone returns a deep copy of m: every map, slice and pointer reachable
// from it (ops, args and their defaults, enums and bounds, headers, query,
// body_json bytes, body_form, pick fields, paginate, auth.oauth, web_hosts) is new, so
// changing the copy never changes m, and changing m never changes the copy.
// Nil stays nil and empty stays empty (a parsed manifest's empty Scopes and
// Fields are non-nil). Clone of nil is nil.
//
// [Registry.Service] and [Registry.Services] return clones; a caller that
// looks a manifest up per request keeps its own (see BenchmarkClone for
// the cost).
func (m *Manifest) Clone() *Manifest {
	if m == nil {
		return nil
	}
	c := *m
	c.Auth = m.Auth.clone()
	c.Tenant = clonePtr(m.Tenant)
	c.Headers = maps.Clone(m.Headers)
	c.WebHosts = slices.Clone(m.WebHosts)
	c.Resources = cloneResources(m.Resources)
	if m.Ops != nil {
		c.Ops = make(map[string]*Op, len(m.Ops))
		for name, op := range m.Ops {
			c.Ops[name] = op.clone()
		}
	}
	return &c
}

func (a Auth) clone() Auth {
	if a.OAuth != nil {
		o := *a.OAuth
		o.Scopes = slices.Clone(a.OAuth.Scopes)
		o.ScopesWrite = slices.Clone(a.OAuth.ScopesWrite)
		o.AuthorizeParams = maps.Clone(a.OAuth.AuthorizeParams)
		a.OAuth = &o
	}
	a.User = clonePtr(a.User)
	return a
}

// clone returns a deep copy of o (see [Manifest.Clone]); nil for nil.
func (o *Op) clone() *Op {
	if o == nil {
		return nil
	}
	c := *o
	if o.Args != nil {
		c.Args = make(map[string]*Arg, len(o.Args))
		for name, a := range o.Args {
			c.Args[name] = a.clone()
		}
	}
	c.Query = maps.Clone(o.Query)
	c.Headers = maps.Clone(o.Headers)
	c.BodyJSON = bytes.Clone(o.BodyJSON)
	c.BodyForm = maps.Clone(o.BodyForm)
	c.Target = slices.Clone(o.Target)
	if o.Pick != nil {
		p := *o.Pick
		p.Fields = slices.Clone(o.Pick.Fields)
		p.Classes = maps.Clone(o.Pick.Classes)
		c.Pick = &p
	}
	if o.Paginate != nil {
		p := *o.Paginate
		c.Paginate = &p
	}
	return &c
}

// clone returns a deep copy of a (see [Manifest.Clone]); nil for nil.
func (a *Arg) clone() *Arg {
	if a == nil {
		return nil
	}
	c := *a
	c.Default = bytes.Clone(a.Default)
	c.Enum = slices.Clone(a.Enum)
	c.Min = clonePtr(a.Min)
	c.Max = clonePtr(a.Max)
	c.MaxLength = clonePtr(a.MaxLength)
	c.Items = a.Items.clone()
	c.MaxItems = clonePtr(a.MaxItems)
	c.Explode = clonePtr(a.Explode)
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
