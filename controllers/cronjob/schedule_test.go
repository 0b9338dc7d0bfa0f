package cronjob

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestParseScheduleSurvivesWhatPanicsTheParser_G7(t *testing.T) {
	for _, spec := range []string{"TZ=UTC", "CRON_TZ=", "TZ="} {
		if _, err := parseSchedule(spec); err == nil {
			t.Errorf("%q parsed", spec)
		}
	}
	if _, err := parseSchedule("TZ=Europe/Berlin 0 3 * * *"); err != nil {
		t.Error(err)
	}
}

func TestMostRecentScheduledTime_G7(t *testing.T) {
	created := time.Date(2026, 3, 1, 10, 0, 30, 0, time.UTC)
	at := func(h, m int) time.Time { return time.Date(2026, 3, 1, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name     string
		schedule string
		last     *time.Time
		deadline *int64
		now      time.Time
		want     string // RFC 3339, or "none"
	}{
		{"before the first", "*/5 * * * *", nil, nil, at(10, 4), "none"},
		{"the first", "*/5 * * * *", nil, nil, at(10, 7), "2026-03-01T10:05:00Z"},
		{"the latest of many", "*/5 * * * *", nil, nil, at(13, 2), "2026-03-01T13:00:00Z"},
		{"after the last run", "*/5 * * * *", ptr.To(at(12, 0)), nil, at(12, 4), "none"},
		{"irregular", "30 6-16/4 * * *", nil, nil, at(23, 0), "2026-03-01T14:30:00Z"},
		{"within the deadline", "0 * * * *", nil, ptr.To[int64](600), at(11, 5), "2026-03-01T11:00:00Z"},
		{"past the deadline", "0 * * * *", nil, ptr.To[int64](600), at(11, 15), "none"},
		{"in a time zone", "TZ=Asia/Tokyo 0 20 * * *", nil, nil, at(12, 0), "2026-03-01T20:00:00+09:00"},
		{"a year of minutes", "* * * * *", nil, nil, at(10, 0).AddDate(1, 0, 0).Add(30 * time.Second), "2027-03-01T10:00:00Z"},
		{"irregular, too many to walk", "30 6-16/4 * * *", nil, nil, at(23, 0).AddDate(30, 0, 0), "2056-03-01T14:30:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
				Spec: batchv1.CronJobSpec{Schedule: tc.schedule, StartingDeadlineSeconds: tc.deadline}}
			if tc.last != nil {
				cj.Status.LastScheduleTime = &metav1.Time{Time: *tc.last}
			}
			sched, err := parseSchedule(tc.schedule)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := mostRecent(cj, sched, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case got == nil && tc.want != "none":
				t.Errorf("most recent = none, want %s", tc.want)
			case got != nil && (tc.want == "none" || !got.Equal(mustTime(t, tc.want))):
				t.Errorf("most recent = %s, want %s", got.Format(time.RFC3339), tc.want)
			}
		})
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
