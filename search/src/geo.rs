//! Points within a great-circle radius. Points are kept sorted by latitude, so a search reads
//! only the band of latitudes the circle spans; longitudes wrap at the antimeridian. Each point
//! is also kept as a position on the unit sphere, so that a point is measured by its straight
//! distance through the sphere (the chord: a few multiplications), which orders points as their
//! great-circle distance does; kilometres are worked out only for what is shown (`Nearness::km`).

/// The mean Earth radius, in kilometres.
const EARTH_KM: f64 = 6_371.008_8;

/// The great-circle distance in kilometres between two points given in degrees.
pub fn distance_km(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = p2 - p1;
    let dl = (lon2 - lon1).to_radians();
    let a = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_KM * a.sqrt().min(1.0).asin()
}

/// A position on the unit sphere.
fn unit(latitude: f64, longitude: f64) -> [f64; 3] {
    let (lat, lon) = (latitude.to_radians(), longitude.to_radians());
    [lat.cos() * lon.cos(), lat.cos() * lon.sin(), lat.sin()]
}

/// How near a point is to a search's centre: the squared chord between them on the unit
/// sphere. Ordered as the great-circle distance is.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Nearness(f64);

impl Nearness {
    pub const FARTHEST: Nearness = Nearness(f64::INFINITY);

    fn between(a: &[f64; 3], b: &[f64; 3]) -> Nearness {
        Nearness((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2))
    }

    /// The nearness of points `km` apart.
    fn of_km(km: f64) -> Nearness {
        let half_angle = (km / EARTH_KM / 2.0).min(std::f64::consts::FRAC_PI_2);
        Nearness((2.0 * half_angle.sin()).powi(2))
    }

    /// The great-circle distance in kilometres.
    pub fn km(self) -> f64 {
        2.0 * EARTH_KM * (self.0.sqrt() / 2.0).min(1.0).asin()
    }

    pub fn total_cmp(&self, other: &Nearness) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub latitude: f64,
    pub longitude: f64,
    /// What the point belongs to (the caller's numbering).
    pub owner: u32,
    /// Which of its owner's points it is.
    pub index: u32,
}

/// A search's circle: its centre on the unit sphere and the nearness of its edge.
#[derive(Debug, Clone, Copy)]
pub struct Circle {
    centre: [f64; 3],
    limit: Nearness,
}

impl Circle {
    pub fn new(latitude: f64, longitude: f64, radius_km: f64) -> Circle {
        Circle {
            centre: unit(latitude, longitude),
            limit: Nearness::of_km(radius_km),
        }
    }

    /// How near `unit` is, when inside.
    fn holds(&self, unit: &[f64; 3]) -> Option<Nearness> {
        let near = Nearness::between(&self.centre, unit);
        (near <= self.limit).then_some(near)
    }
}

pub struct GeoIndex {
    /// The points' latitudes, ascending.
    latitudes: Vec<f64>,
    /// Each point's owner, in the same order.
    owners: Vec<u32>,
    /// Each point's position on the unit sphere, a column per axis, in the same order: a block
    /// of points is measured in a few vector instructions.
    xs: Vec<f64>,
    ys: Vec<f64>,
    zs: Vec<f64>,
    /// The positions again, grouped by owner in owner order: owner `o`'s are
    /// `by_owner[owner_starts[o]..owner_starts[o + 1]]`.
    by_owner: Vec<[f64; 3]>,
    owner_starts: Vec<u32>,
}

/// Points measured at a time: their nearness, then a bit each for those inside.
const BLOCK: usize = 64;

impl GeoIndex {
    pub fn build(mut points: Vec<Point>) -> GeoIndex {
        points.sort_by(|a, b| a.latitude.total_cmp(&b.latitude));
        let units: Vec<[f64; 3]> = points
            .iter()
            .map(|p| unit(p.latitude, p.longitude))
            .collect();
        let owners = points
            .iter()
            .map(|p| p.owner as usize + 1)
            .max()
            .unwrap_or(0);
        let mut owner_starts = vec![0u32; owners + 1];
        for p in &points {
            owner_starts[p.owner as usize + 1] += 1;
        }
        for o in 0..owners {
            owner_starts[o + 1] += owner_starts[o];
        }
        let mut next = owner_starts.clone();
        let mut by_owner = vec![[0.0; 3]; points.len()];
        for (p, u) in points.iter().zip(&units) {
            by_owner[next[p.owner as usize] as usize] = *u;
            next[p.owner as usize] += 1;
        }
        GeoIndex {
            latitudes: points.iter().map(|p| p.latitude).collect(),
            owners: points.iter().map(|p| p.owner).collect(),
            xs: units.iter().map(|u| u[0]).collect(),
            ys: units.iter().map(|u| u[1]).collect(),
            zs: units.iter().map(|u| u[2]).collect(),
            by_owner,
            owner_starts,
        }
    }

    pub fn memory(&self) -> usize {
        (self.latitudes.capacity() + self.xs.capacity() + self.ys.capacity() + self.zs.capacity())
            * 8
            + self.owners.capacity() * 4
            + self.by_owner.capacity() * std::mem::size_of::<[f64; 3]>()
            + self.owner_starts.capacity() * 4
    }

    /// How near `owner`'s nearest point inside `circle` is; `None` when none is inside.
    pub fn nearest_of(&self, owner: u32, circle: &Circle) -> Option<Nearness> {
        let o = owner as usize;
        let (Some(start), Some(end)) = (self.owner_starts.get(o), self.owner_starts.get(o + 1))
        else {
            return None;
        };
        self.by_owner[*start as usize..*end as usize]
            .iter()
            .filter_map(|u| circle.holds(u))
            .min_by(Nearness::total_cmp)
    }

    /// Calls `found` with the owner and nearness of every point within `radius_km` of
    /// (`latitude`, `longitude`): first those north of the centre's latitude, nearest latitude
    /// first, then those south, likewise (so the nearest points come early, and a caller
    /// keeping only the nearest few soon passes the rest over).
    pub fn within(
        &self,
        latitude: f64,
        longitude: f64,
        radius_km: f64,
        mut found: impl FnMut(u32, Nearness),
    ) {
        // A degree of latitude is the same length everywhere: the band the circle can reach.
        let reach = (radius_km / EARTH_KM).to_degrees();
        let (low, high) = (latitude - reach, latitude + reach);
        let start = self.latitudes.partition_point(|l| *l < low);
        let end = self.latitudes.partition_point(|l| *l <= high).max(start);
        let middle = self
            .latitudes
            .partition_point(|l| *l < latitude)
            .clamp(start, end);
        let circle = Circle::new(latitude, longitude, radius_km);
        let mut block = |from: usize, to: usize| {
            let mut nearness = [f64::INFINITY; BLOCK];
            // Branch-free over slices of one length, so that the compiler measures several
            // points per instruction.
            let [cx, cy, cz] = circle.centre;
            let axes = self.xs[from..to].iter().zip(&self.ys[from..to]);
            for ((near, (x, y)), z) in nearness.iter_mut().zip(axes).zip(&self.zs[from..to]) {
                *near = (x - cx).powi(2) + (y - cy).powi(2) + (z - cz).powi(2);
            }
            let mut inside = 0u64;
            for (j, near) in nearness.iter().enumerate() {
                inside |= u64::from(*near <= circle.limit.0) << j;
            }
            while inside != 0 {
                let j = inside.trailing_zeros() as usize;
                inside &= inside - 1;
                found(self.owners[from + j], Nearness(nearness[j]));
            }
        };
        for from in (middle..end).step_by(BLOCK) {
            block(from, (from + BLOCK).min(end));
        }
        // South: blocks ending at the centre's latitude, walking away from it.
        let mut to = middle;
        while to > start {
            let from = to.saturating_sub(BLOCK).max(start);
            block(from, to);
            to = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `within` finds, in the order it gives them.
    fn within(index: &GeoIndex, lat: f64, lon: f64, radius_km: f64) -> Vec<(u32, Nearness)> {
        let mut found = Vec::new();
        index.within(lat, lon, radius_km, |owner, near| found.push((owner, near)));
        found
    }

    fn point(latitude: f64, longitude: f64, owner: u32) -> Point {
        Point {
            latitude,
            longitude,
            owner,
            index: 0,
        }
    }

    #[test]
    fn distances_are_great_circle() {
        // Cape Town to Johannesburg: about 1,260 km.
        let d = distance_km(-33.9249, 18.4241, -26.2041, 28.0473);
        assert!((d - 1_262.0).abs() < 5.0, "{d}");
        assert_eq!(distance_km(10.0, 20.0, 10.0, 20.0), 0.0);
    }

    #[test]
    fn points_just_inside_count_and_just_outside_do_not() {
        // 0.1 degrees of latitude is 11.12 km.
        let index = GeoIndex::build(vec![
            point(0.1, 0.0, 1),
            point(0.09, 0.0, 2),
            point(-0.05, 0.0, 3),
        ]);
        let found: Vec<u32> = within(&index, 0.0, 0.0, 10.0).iter().map(|f| f.0).collect();
        assert_eq!(found, [3]);
        let mut found: Vec<u32> = within(&index, 0.0, 0.0, 11.2).iter().map(|f| f.0).collect();
        found.sort();
        assert_eq!(found, [1, 2, 3]);
        // 0.1 degrees is 11.119 km: a radius a metre either side of it.
        assert_eq!(within(&index, 0.0, 0.0, 11.118).len(), 2);
        assert_eq!(within(&index, 0.0, 0.0, 11.120).len(), 3);
    }

    #[test]
    fn nearness_orders_as_distance_does_and_gives_it_back() {
        let points = vec![
            point(-33.95, 18.45, 1),
            point(-33.90, 18.40, 2),
            point(-34.10, 18.60, 3),
        ];
        let index = GeoIndex::build(points.clone());
        let (lat, lon) = (-33.9249, 18.4241);
        let mut found = within(&index, lat, lon, 50.0);
        found.sort_by(|a, b| a.1.total_cmp(&b.1));
        let mut by_haversine: Vec<(u32, f64)> = points
            .iter()
            .map(|p| (p.owner, distance_km(lat, lon, p.latitude, p.longitude)))
            .collect();
        by_haversine.sort_by(|a, b| a.1.total_cmp(&b.1));
        for ((owner, near), (same, km)) in found.iter().zip(&by_haversine) {
            assert_eq!(owner, same);
            assert!((near.km() - km).abs() < 1e-6, "{} against {km}", near.km());
        }
        // The whole Earth is within half its circumference.
        assert_eq!(within(&index, 0.0, 0.0, 20_038.0).len(), 3);
    }

    #[test]
    fn an_owners_nearest_point_inside_is_what_a_search_finds() {
        let index = GeoIndex::build(vec![
            point(-33.95, 18.45, 4),
            point(-33.90, 18.40, 1),
            point(-34.30, 18.60, 1),
            point(-26.20, 28.04, 2),
        ]);
        let (lat, lon) = (-33.9249, 18.4241);
        let circle = Circle::new(lat, lon, 30.0);
        for owner in [0, 1, 2, 3, 4, 9] {
            let found = within(&index, lat, lon, 30.0)
                .into_iter()
                .filter(|(o, _)| *o == owner)
                .map(|(_, n)| n)
                .min_by(Nearness::total_cmp);
            assert_eq!(index.nearest_of(owner, &circle), found, "owner {owner}");
        }
        assert!(index.nearest_of(1, &circle).is_some());
        assert!(index.nearest_of(2, &circle).is_none());
    }

    #[test]
    fn blocks_either_side_of_the_centre_find_what_a_scan_finds() {
        // Thousands of points on a grid around Cape Town: several blocks north and south.
        let points: Vec<Point> = (0..3_000u32)
            .map(|n| {
                point(
                    -34.2 + f64::from(n % 60) * 0.01,
                    18.2 + f64::from(n / 60) * 0.01,
                    n,
                )
            })
            .collect();
        let index = GeoIndex::build(points.clone());
        let (lat, lon) = (-33.9249, 18.4241);
        for radius in [0.5, 5.0, 20.0, 80.0] {
            let mut found: Vec<u32> = within(&index, lat, lon, radius)
                .iter()
                .map(|f| f.0)
                .collect();
            found.sort();
            let mut scanned: Vec<u32> = points
                .iter()
                .filter(|p| {
                    Circle::new(lat, lon, radius)
                        .holds(&unit(p.latitude, p.longitude))
                        .is_some()
                })
                .map(|p| p.owner)
                .collect();
            scanned.sort();
            assert_eq!(found, scanned, "{radius} km");
        }
    }

    #[test]
    fn the_antimeridian_is_no_edge() {
        // Fiji's two sides: 179.9 E and 179.9 W are 22 km apart at 17 S.
        let index = GeoIndex::build(vec![point(-17.0, -179.9, 7)]);
        let found = within(&index, -17.0, 179.9, 25.0);
        assert_eq!(found.len(), 1);
        assert!((found[0].1.km() - 21.3).abs() < 0.5, "{}", found[0].1.km());
    }
}
