package dev.levee.observer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.core.Member;
import dev.levee.runtime.Json;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The observer's {@code GET /v1/stats/history}: the limiters' per-second series summed (issue 26 item 3). */
class StatsHistoryTest {

    static StatsAggregator.Fetched answer(String id, String json) throws Exception {
        return new StatsAggregator.Fetched(new Member(id, "127.0.0.1:1"), Json.MAPPER.readTree(json), null);
    }

    @Test
    void seriesOfTheLimitersAreSummedPerEntryAlignedOnTheirLastSecond() throws Exception {
        StatsAggregator.HistoryAnswer h = StatsAggregator.sumHistory(List.of(
                answer("l1", """
                        {"limiter":"l1","enabled":true,"endSecond":100,"seconds":4,"windows":[10,60],"rows":[
                          {"resource":"photos","level":"resource","offered":[1,2,3,4],"refused":[0,0,1,1],"wouldReject":[0,0,0,0]},
                          {"resource":"logs","level":"prefix","prefix":"app/","offered":[5,5,5,5],"refused":[0,0,0,0],"wouldReject":[0,0,0,0]}]}"""),
                answer("l2", """
                        {"limiter":"l2","enabled":true,"endSecond":100,"seconds":2,"windows":[10,60],"rows":[
                          {"resource":"photos","level":"resource","offered":[10,20],"refused":[1,2],"wouldReject":[0,3]}]}"""),
                new StatsAggregator.Fetched(new Member("l3", "127.0.0.1:2"), null, "Connection refused")));
        assertThat(h.answered()).isEqualTo(2);
        assertThat(h.seconds()).isEqualTo(4);
        assertThat(h.windows()).containsExactly(10L, 60L);
        assertThat(h.rows()).extracting(StatsAggregator.SeriesRow::resource).containsExactly("photos", "logs");
        StatsAggregator.SeriesRow photos = h.rows().get(0);
        assertThat(photos.offered()).containsExactly(1, 2, 13, 24); // l2's two seconds are the last two
        assertThat(photos.refused()).containsExactly(0, 0, 2, 3);
        assertThat(photos.wouldReject()).containsExactly(0, 0, 0, 3);
        assertThat(photos.limiters()).isEqualTo(2);
        assertThat(h.rows().get(1).prefix()).isEqualTo("app/");
        assertThat(h.rows().get(1).limiters()).isEqualTo(1);
    }
}
