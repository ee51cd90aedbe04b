package stamp

import "container/list"

// lru is a table of at most max entries that forgets the least recently
// used one to make room for a new one: a flood of new keys costs old
// keys their state, never a new key its answer. Not safe for concurrent
// use: its owner locks.
type lru[K comparable, V any] struct {
	max   int
	order *list.List // of *lruEntry[K, V], most recently used at the front
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](maxEntries int) *lru[K, V] {
	return &lru[K, V]{max: maxEntries, order: list.New(), items: map[K]*list.Element{}}
}

// get returns k's value, made the most recently used, and whether it
// was there; when not, a zero value is stored for it, and evicted says
// whether that pushed the least recently used entry out.
func (c *lru[K, V]) get(k K) (v *V, found, evicted bool) {
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return &e.Value.(*lruEntry[K, V]).val, true, false
	}
	if c.order.Len() >= c.max {
		if old := c.order.Back(); old != nil {
			c.order.Remove(old)
			delete(c.items, old.Value.(*lruEntry[K, V]).key)
			evicted = true
		}
	}
	ent := &lruEntry[K, V]{key: k}
	c.items[k] = c.order.PushFront(ent)
	return &ent.val, false, evicted
}

// len is the number of entries.
func (c *lru[K, V]) len() int { return c.order.Len() }
