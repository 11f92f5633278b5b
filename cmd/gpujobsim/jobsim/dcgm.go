package jobsim

import (
	"bufio"
	"fmt"
	"net/http"
	"time"
)

// DCGM field names the NVIDIA DCGM exporter publishes by default (MiB).
const (
	DCGMFBUsed     = "DCGM_FI_DEV_FB_USED"
	DCGMFBFree     = "DCGM_FI_DEV_FB_FREE"
	DCGMFBReserved = "DCGM_FI_DEV_FB_RESERVED"
)

// DCGMHandler serves a DCGM-exporter-style /metrics page for every GPU of the job at the
// job time now() returns: framebuffer used, free and reserved in MiB, labelled like the
// exporter (gpu, UUID, pci_bus_id, device, modelName, Hostname). One page lists every host,
// so one scrape target covers the job; the Hostname label tells the hosts apart.
func (s *Scenario) DCGMHandler(now func() time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t := now()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		bw := bufio.NewWriter(w)
		type field struct {
			name, help string
			value      func(Sample) int64
		}
		fields := []field{
			{DCGMFBFree, "Framebuffer memory free (in MiB).", func(x Sample) int64 { return x.DeviceFree / mib }},
			{DCGMFBUsed, "Framebuffer memory used (in MiB).", func(x Sample) int64 { return x.DeviceUsed / mib }},
			{DCGMFBReserved, "Framebuffer memory reserved (in MiB).", func(Sample) int64 { return driverReservedBytes / mib }},
		}
		for _, f := range fields {
			fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s gauge\n", f.name, f.help, f.name)
			for r := range s.Ranks {
				if !s.reportsAt(r, t) {
					continue
				}
				rk := &s.Ranks[r]
				fmt.Fprintf(bw, "%s{gpu=\"%d\",UUID=\"%s\",pci_bus_id=\"00000000:%02X:00.0\",device=\"nvidia%d\",modelName=\"%s\",Hostname=\"%s\"} %d\n",
					f.name, rk.GPU, rk.UUID, 0x18+rk.GPU*0x10, rk.GPU, modelName, rk.Host, f.value(s.SampleAt(r, t)))
			}
		}
		_ = bw.Flush() // a scraper that hung up has nothing left to read
	})
}
