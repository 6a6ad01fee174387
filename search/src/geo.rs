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

pub struct GeoIndex {
    /// By latitude.
    points: Vec<Point>,
    /// Each point's position on the unit sphere, in the same order.
    units: Vec<[f64; 3]>,
}

impl GeoIndex {
    pub fn build(mut points: Vec<Point>) -> GeoIndex {
        points.sort_by(|a, b| a.latitude.total_cmp(&b.latitude));
        let units = points
            .iter()
            .map(|p| unit(p.latitude, p.longitude))
            .collect();
        GeoIndex { points, units }
    }

    pub fn memory(&self) -> usize {
        self.points.capacity() * std::mem::size_of::<Point>()
            + self.units.capacity() * std::mem::size_of::<[f64; 3]>()
    }

    /// Every point within `radius_km` of (`latitude`, `longitude`), with its nearness.
    pub fn within(
        &self,
        latitude: f64,
        longitude: f64,
        radius_km: f64,
    ) -> impl Iterator<Item = (&Point, Nearness)> {
        // A degree of latitude is the same length everywhere: the band the circle can reach.
        let reach = (radius_km / EARTH_KM).to_degrees();
        let (low, high) = (latitude - reach, latitude + reach);
        // And the band of longitudes at the circle's widest latitude, unless it nears a pole
        // or wraps the whole Earth.
        let widest = latitude.abs() + reach;
        let lon_reach = if widest < 89.0 {
            reach / widest.to_radians().cos()
        } else {
            f64::INFINITY
        };
        let centre = unit(latitude, longitude);
        let limit = Nearness::of_km(radius_km);
        let start = self.points.partition_point(|p| p.latitude < low);
        self.points[start..]
            .iter()
            .zip(&self.units[start..])
            .take_while(move |(p, _)| p.latitude <= high)
            .filter(move |(p, _)| {
                let apart = (p.longitude - longitude).abs();
                apart.min(360.0 - apart) <= lon_reach
            })
            .filter_map(move |(p, u)| {
                let near = Nearness::between(&centre, u);
                (near <= limit).then_some((p, near))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let found: Vec<u32> = index.within(0.0, 0.0, 10.0).map(|(p, _)| p.owner).collect();
        assert_eq!(found, [3]);
        let found: Vec<u32> = index.within(0.0, 0.0, 11.2).map(|(p, _)| p.owner).collect();
        assert_eq!(found, [3, 2, 1]);
        // 0.1 degrees is 11.119 km: a radius a metre either side of it.
        assert_eq!(index.within(0.0, 0.0, 11.118).count(), 2);
        assert_eq!(index.within(0.0, 0.0, 11.120).count(), 3);
    }

    #[test]
    fn nearness_orders_as_distance_does_and_gives_it_back() {
        let index = GeoIndex::build(vec![
            point(-33.95, 18.45, 1),
            point(-33.90, 18.40, 2),
            point(-34.10, 18.60, 3),
        ]);
        let (lat, lon) = (-33.9249, 18.4241);
        let mut found: Vec<(u32, Nearness)> = index
            .within(lat, lon, 50.0)
            .map(|(p, n)| (p.owner, n))
            .collect();
        found.sort_by(|a, b| a.1.total_cmp(&b.1));
        let mut by_haversine: Vec<(u32, f64)> = index
            .points
            .iter()
            .map(|p| (p.owner, distance_km(lat, lon, p.latitude, p.longitude)))
            .collect();
        by_haversine.sort_by(|a, b| a.1.total_cmp(&b.1));
        for ((owner, near), (same, km)) in found.iter().zip(&by_haversine) {
            assert_eq!(owner, same);
            assert!((near.km() - km).abs() < 1e-6, "{} against {km}", near.km());
        }
        // The whole Earth is within half its circumference.
        assert_eq!(index.within(0.0, 0.0, 20_038.0).count(), 3);
    }

    #[test]
    fn the_antimeridian_is_no_edge() {
        // Fiji's two sides: 179.9 E and 179.9 W are 22 km apart at 17 S.
        let index = GeoIndex::build(vec![point(-17.0, -179.9, 7)]);
        let found: Vec<_> = index.within(-17.0, 179.9, 25.0).collect();
        assert_eq!(found.len(), 1);
        assert!((found[0].1.km() - 21.3).abs() < 0.5, "{}", found[0].1.km());
    }
}
