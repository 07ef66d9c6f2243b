package resp

// crcTable is CRC-16/XMODEM (polynomial 0x1021), the checksum Redis Cluster
// maps keys to slots with.
var crcTable = makeCRCTable()

func makeCRCTable() []uint16 {
	t := make([]uint16, 256)
	for i := 0; i < 256; i++ {
		c := uint16(i) << 8
		for j := 0; j < 8; j++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}

func crc16(s string) uint16 {
	var c uint16
	for i := 0; i < len(s); i++ {
		c = c<<8 ^ crcTable[byte(c>>8)^s[i]]
	}
	return c
}

// Slots is the number of hash slots in a Redis Cluster.
const Slots = 16384

// Slot returns the cluster slot of key: CRC16 of its hash tag (the text
// between the first '{' and the next '}', if not empty) modulo 16384.
func Slot(key string) int {
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					if j > i+1 {
						key = key[i+1 : j]
					}
					break
				}
			}
			break
		}
	}
	return int(crc16(key)) & (Slots - 1)
}
