package ids

import (
	"crypto/rand"
	"sync"
)

// Random fills b with random bytes from crypto/rand, as unguessable as
// crypto/rand.Read makes them: the random parts of ids, and canaryd's
// request ids. They are read from crypto/rand a buffer at a time, as a
// call of crypto/rand.Read costs as much for an id's few bytes as for a
// buffer of them; a byte is handed out once, and not kept once it is.
func Random(b []byte) {
	if len(b) > len(random.buf)/4 {
		_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
		return
	}
	random.mu.Lock()
	if random.left < len(b) {
		_, _ = rand.Read(random.buf[:])
		random.left = len(random.buf)
	}
	rest := random.buf[len(random.buf)-random.left:][:len(b)]
	copy(b, rest)
	clear(rest)
	random.left -= len(b)
	random.mu.Unlock()
}

// random is what Random has read from crypto/rand and not handed out: the
// last left bytes of buf.
var random struct {
	mu   sync.Mutex
	buf  [1024]byte
	left int
}
