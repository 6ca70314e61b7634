package outbound

import "sync"

// Buffers keeps byte buffers for reuse: a new buffer the size of a message
// per message (build, derived text, signature, the html scanner's copy)
// was most of a broadcast's allocations (profiled). The zero value is
// ready.
type Buffers struct {
	p sync.Pool
	// holders are the emptied *[]byte of taken buffers, for Put to reuse:
	// a new one per Put was four of a broadcast message's allocations.
	holders sync.Pool
}

// maxKeptBuffer bounds the buffers kept: one message with large
// attachments should not pin its memory.
const maxKeptBuffer = 1 << 20

// Get returns an empty buffer, with room when one was put back.
func (b *Buffers) Get() []byte {
	if p, ok := b.p.Get().(*[]byte); ok {
		buf := (*p)[:0]
		*p = nil
		b.holders.Put(p)
		return buf
	}
	return nil
}

// Put keeps buf's memory for a later Get. Nothing may read buf after.
func (b *Buffers) Put(buf []byte) {
	if c := cap(buf); c > 0 && c <= maxKeptBuffer {
		p, _ := b.holders.Get().(*[]byte)
		if p == nil {
			p = new([]byte)
		}
		*p = buf[:0]
		b.p.Put(p)
	}
}
