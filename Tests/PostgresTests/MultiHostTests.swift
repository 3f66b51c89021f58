import Postgres
import Testing

/// Connection strings that name a primary and its standbys (libpq's multi-host form).
@Suite struct MultiHostTests {
    @Test(
        "several hosts without a session kind get read-write; anything else is unchanged",
        arguments: [
            (
                "postgresql://127.0.0.1:5432,127.0.0.1:5433/outletd",
                "postgresql://127.0.0.1:5432,127.0.0.1:5433/outletd?target_session_attrs=read-write"
            ),
            (
                "postgresql://u:p,w@db1,db2/outletd?sslmode=require",
                "postgresql://u:p,w@db1,db2/outletd?sslmode=require&target_session_attrs=read-write"
            ),
            (
                "postgres://db1:5432,db2:5432",
                "postgres://db1:5432,db2:5432?target_session_attrs=read-write"
            ),
            (
                "postgresql://db1,db2/outletd?target_session_attrs=any",
                "postgresql://db1,db2/outletd?target_session_attrs=any"
            ),
            ("postgresql://127.0.0.1:5432/outletd", "postgresql://127.0.0.1:5432/outletd"),
            ("postgresql://u:a,b@db1/outletd", "postgresql://u:a,b@db1/outletd"),  // a comma in the password
            (
                "host=db1,db2 port=5432,5433 dbname=outletd",
                "host=db1,db2 port=5432,5433 dbname=outletd target_session_attrs=read-write"
            ),
            (
                "dbname=outletd hostaddr=10.0.0.1,10.0.0.2",
                "dbname=outletd hostaddr=10.0.0.1,10.0.0.2 target_session_attrs=read-write"
            ),
            ("host=db1 dbname=outletd", "host=db1 dbname=outletd"),
            ("host=/var/run/postgresql dbname=outletd", "host=/var/run/postgresql dbname=outletd"),
        ])
    func requiringPrimary(given: String, expected: String) {
        #expect(MultiHost.requiringPrimary(given) == expected)
    }

    @Test func theHostsAreCountedAndThePasswordStaysRedacted() {
        #expect(MultiHost.hostCount("postgresql://a:1,b:2,c:3/outletd") == 3)
        #expect(MultiHost.hostCount("postgresql:///outletd") == 1)
        let url = "postgresql://outletd:s3cret@127.0.0.1:5432,127.0.0.1:5433/outletd?target_session_attrs=read-write"
        #expect(
            redactConnectionString(url)
                == "postgresql://outletd:***@127.0.0.1:5432,127.0.0.1:5433/outletd?target_session_attrs=read-write")
    }
}
