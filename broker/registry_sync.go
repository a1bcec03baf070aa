package broker

import "github.com/elevenmessenger/pinned/broker/regsync"

// syncedDoc is the registry document of one synced snapshot.
type syncedDoc struct {
	from *regsync.Current
	body []byte
	etag string
}

// registryDoc returns the body and strong ETag GET /registry serves: the
// sync job's last good snapshot, or the embedded registry before the
// first (or without a sync job).
func (b *Broker) registryDoc() ([]byte, string) {
	if b.sync == nil {
		return b.registryBody, b.registryETag
	}
	cur := b.sync.Current()
	if cur == nil {
		return b.registryBody, b.registryETag
	}
	if d := b.synced.Load(); d != nil && d.from == cur {
		return d.body, d.etag
	}
	body, err := cur.Registry.DocumentJSON()
	if err != nil { // a registry that loaded always encodes
		return b.registryBody, b.registryETag
	}
	d := &syncedDoc{from: cur, body: append(body, '\n'), etag: `"` + cur.Snapshot.Digest + `"`}
	b.synced.Store(d)
	return d.body, d.etag
}
